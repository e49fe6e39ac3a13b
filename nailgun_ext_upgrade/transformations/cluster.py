"""Cluster attributes ({"editable": ..., "generated": ...}) across Fuel versions."""
from nailgun_ext_upgrade import transformations


def enable_ibp(data):
    """6.1 made image-based provisioning the only way to provision."""
    method = data["editable"].get("provision", {}).get("method")
    if isinstance(method, dict):
        method["value"] = "image"
    return data


def _text_to_list(field):
    """A comma-separated text field as a list; anything else is left for the clone's type check."""
    if isinstance(field, dict) and field.get("type") == "text" and isinstance(field.get("value", ""), str):
        field["type"] = "text_list"
        field["value"] = [item.strip() for item in field.get("value", "").split(",") if item.strip()]


def transform_dns_list(data):
    """9.0 keeps DNS servers as a list, not a comma-separated string."""
    _text_to_list(data["editable"].get("external_dns", {}).get("dns_list"))
    return data


def transform_ntp_list(data):
    """9.0 keeps NTP servers as a list, not a comma-separated string."""
    _text_to_list(data["editable"].get("external_ntp", {}).get("ntp_list"))
    return data


def drop_generated_provision(data):
    """9.0 images are per environment: the seed keeps its own generated image data."""
    data["generated"].pop("provision", None)
    return data


class Manager(transformations.Manager):
    name = "cluster"
    default_config = {
        "6.1": ["image_provision"],
        "9.0": ["dns_list", "ntp_list", "drop_provision"],
    }
