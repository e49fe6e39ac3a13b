"""A node's disk layout (list of disks) across Fuel versions."""
from nailgun_ext_upgrade import transformations


def transform_node_volumes(volumes):
    """6.1 puts the OS on plain partitions instead of the ``os`` LVM volume group."""
    os_group = next((v for v in volumes if v.get("id") == "os"), None)
    if os_group is None:
        return volumes
    partitions = [{"name": lv["name"], "size": lv["size"], "type": "partition",
                   "mount": lv.get("mount"), "file_system": lv.get("file_system")}
                  for lv in os_group.get("volumes", [])]
    for disk in volumes:
        if disk is os_group:
            continue
        spaces = []
        for space in disk.get("volumes", []):
            if space.get("type") == "pv" and space.get("vg") == "os" and space.get("size", 0) > 0:
                spaces.extend(dict(p) for p in partitions)
                continue
            if space.get("type") in ("lvm_meta_pool", "boot"):
                space = dict(space, size=0)
            spaces.append(space)
        disk["volumes"] = spaces
    return volumes


class Manager(transformations.Manager):
    name = "volumes"
    default_config = {"6.1": ["node_volumes"]}
