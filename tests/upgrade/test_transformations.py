"""Transformations: configuration, loading through stevedore, version order, and each transformer."""
import pytest

from nailgun_ext_upgrade import transformations
from nailgun_ext_upgrade.transformations import cluster, vip, volumes
from nailgun_host.objects.release import parse_version
from nailgun_host.settings import settings


def test_default_config_without_settings():
    assert transformations.get_config("cluster", cluster.Manager.default_config) == cluster.Manager.default_config


def test_settings_replace_the_list_of_one_version():
    settings["CLUSTER_UPGRADE"] = {"transformations": {"cluster": {"9.0": ["dns_list"]}}}
    assert transformations.get_config("cluster", cluster.Manager.default_config) == {
        "6.1": ["image_provision"], "9.0": ["dns_list"]}
    assert cluster.Manager.default_config["9.0"] == ["dns_list", "ntp_list", "drop_provision"]


def test_manager_loads_registered_entry_points_in_version_order():
    manager = cluster.Manager()
    assert [(v, [f.__name__ for f in fs]) for v, fs in manager.transformers] == [
        ("6.1", ["enable_ibp"]),
        ("9.0", ["transform_dns_list", "transform_ntp_list", "drop_generated_provision"])]


def test_unknown_transformer_name_raises():
    with pytest.raises(KeyError, match="Unknown cluster transformations for version 9.0: nope"):
        transformations.load_transformers("cluster", {"9.0": ["nope"]})


def test_versions_sort_numerically():
    loaded = transformations.load_transformers("cluster", {"9.0": [], "10.0": [], "6.1": []})
    assert [version for version, _ in loaded] == ["6.1", "9.0", "10.0"]
    assert parse_version("10.0") > parse_version("9.0") > parse_version("6.1")
    assert parse_version("9.0") == parse_version("9")


class Recorder(transformations.Manager):
    """A manager whose transformers record the versions they ran for."""

    name = "test"

    def __init__(self, versions):
        self.transformers = [(v, [lambda data, v=v: data + [v]]) for v in versions]


@pytest.mark.parametrize("low, high, ran", [
    ("7.0", "9.0", ["8.0", "9.0"]),
    ("6.1", "10.0", ["7.0", "8.0", "9.0", "10.0"]),
    ("9.0", "10.0", ["10.0"]),
    ("9.0", "9.0", []),
    ("10.0", "9.0", []),
])
def test_apply_runs_versions_after_from_up_to_to(low, high, ran):
    manager = Recorder(["6.1", "7.0", "8.0", "9.0", "10.0"])
    assert manager.apply(low, high, []) == ran


def test_apply_does_not_touch_its_input():
    data = {"editable": {"external_dns": {"dns_list": {"type": "text", "value": "a"}}}, "generated": {}}
    cluster.Manager().apply("8.0", "9.0", data)
    assert data["editable"]["external_dns"]["dns_list"] == {"type": "text", "value": "a"}


def test_settings_can_switch_a_transformation_off():
    settings["CLUSTER_UPGRADE"] = {"transformations": {"cluster": {"9.0": ["drop_provision"]}}}
    data = {"editable": {"external_dns": {"dns_list": {"type": "text", "value": "a"}}},
            "generated": {"provision": {}}}
    result = cluster.Manager().apply("8.0", "9.0", data)
    assert result == {"editable": {"external_dns": {"dns_list": {"type": "text", "value": "a"}}}, "generated": {}}


@pytest.mark.parametrize("text, expected", [
    ("a,b,\nc, d", ["a", "b", "c", "d"]),
    ("8.8.8.8", ["8.8.8.8"]),
    ("", []),
])
def test_dns_and_ntp_text_becomes_a_list(text, expected):
    data = {"editable": {"external_dns": {"dns_list": {"type": "text", "value": text}},
                         "external_ntp": {"ntp_list": {"type": "text", "value": text}}}}
    data = cluster.transform_ntp_list(cluster.transform_dns_list(data))
    for section, key in (("external_dns", "dns_list"), ("external_ntp", "ntp_list")):
        assert data["editable"][section][key] == {"type": "text_list", "value": expected}


def test_dns_list_already_a_list_is_kept():
    field = {"type": "text_list", "value": ["a"]}
    assert cluster.transform_dns_list({"editable": {"external_dns": {"dns_list": dict(field)}}}) == {
        "editable": {"external_dns": {"dns_list": field}}}


def test_text_list_of_unexpected_shape_is_left_alone():
    data = {"editable": {"external_dns": {"dns_list": {"type": "text", "value": ["a"]}},
                         "external_ntp": {"ntp_list": "pool.ntp.org"}}}
    assert cluster.transform_ntp_list(cluster.transform_dns_list(data)) == {
        "editable": {"external_dns": {"dns_list": {"type": "text", "value": ["a"]}},
                     "external_ntp": {"ntp_list": "pool.ntp.org"}}}


def test_image_provisioning_enabled_for_six_one():
    data = {"editable": {"provision": {"method": {"value": "cobbler"}}}, "generated": {}}
    assert cluster.Manager().apply("6.0", "6.1", data)["editable"]["provision"]["method"]["value"] == "image"


def test_vips_renamed_with_namespaces():
    vips = {1: {"haproxy": {"ip_addr": "10.0.0.2", "vip_namespace": None},
                "vrouter": {"ip_addr": "10.0.0.3", "vip_namespace": None},
                "other": {"ip_addr": "10.0.0.4"}},
            2: {"haproxy": {"ip_addr": "172.16.0.2", "vip_namespace": "custom"},
                "vrouter": {"ip_addr": "172.16.0.3"}}}
    renamed, names = vip.transform_vips((vips, {1: "management", 2: "public"}))
    assert names == {1: "management", 2: "public"}
    assert renamed == {
        1: {"management": {"ip_addr": "10.0.0.2", "vip_namespace": "haproxy", "vip_name": "management"},
            "vrouter": {"ip_addr": "10.0.0.3", "vip_namespace": "vrouter", "vip_name": "vrouter"}},
        2: {"public": {"ip_addr": "172.16.0.2", "vip_namespace": "custom", "vip_name": "public"},
            "vrouter_pub": {"ip_addr": "172.16.0.3", "vip_namespace": "vrouter", "vip_name": "vrouter_pub"}}}


def test_vip_transformation_runs_only_from_six_x():
    data = ({1: {"haproxy": {"ip_addr": "10.0.0.2"}}}, {1: "management"})
    assert vip.Manager().apply("7.0", "9.0", data) == data
    assert vip.Manager().apply("6.1", "9.0", data)[0] == {
        1: {"management": {"ip_addr": "10.0.0.2", "vip_namespace": "haproxy", "vip_name": "management"}}}


def test_os_volume_group_becomes_partitions():
    layout = [
        {"id": "sda", "type": "disk", "volumes": [
            {"type": "boot", "size": 300}, {"type": "lvm_meta_pool", "size": 64},
            {"type": "pv", "vg": "os", "size": 20000}, {"type": "pv", "vg": "image", "size": 5000}]},
        {"id": "sdb", "type": "disk", "volumes": [{"type": "pv", "vg": "os", "size": 0}]},
        {"id": "os", "type": "vg", "volumes": [
            {"name": "root", "size": 15000, "mount": "/", "file_system": "ext4"},
            {"name": "swap", "size": 5000, "mount": "swap", "file_system": "swap"}]},
    ]
    result = volumes.Manager().apply("6.0", "9.0", layout)
    assert result[0]["volumes"] == [
        {"type": "boot", "size": 0}, {"type": "lvm_meta_pool", "size": 0},
        {"name": "root", "size": 15000, "type": "partition", "mount": "/", "file_system": "ext4"},
        {"name": "swap", "size": 5000, "type": "partition", "mount": "swap", "file_system": "swap"},
        {"type": "pv", "vg": "image", "size": 5000}]
    assert result[1]["volumes"] == [{"type": "pv", "vg": "os", "size": 0}]
    assert result[2] == layout[2]
    assert volumes.Manager().apply("6.1", "9.0", layout) == layout


def test_layout_without_os_group_is_kept():
    layout = [{"id": "sda", "type": "disk", "volumes": [{"name": "os", "size": 100, "type": "pv"}]}]
    assert volumes.transform_node_volumes(layout) == layout
