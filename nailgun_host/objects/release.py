"""Releases: what a cluster is installed from, with real version ordering."""
import copy
import os
import re

import yaml

from nailgun_host import errors
from nailgun_host.db import db, get_or_404
from nailgun_host.db.models import Cluster, Release
from nailgun_host.objects import attributes, network
from nailgun_host.settings import settings
from nailgun_platform import secrets
from nailgun_platform.secrets import classify, masking

DEFAULTS_FILE = os.path.join(os.path.dirname(__file__), os.pardir, "fixtures", "release_defaults.yaml")
METADATA_FIELDS = ("modes_metadata", "roles_metadata", "attributes_metadata", "networks_metadata",
                   "network_roles_metadata", "components_metadata", "deployment_tasks", "extensions")
STATES = ("available", "unavailable", "manageonly")

_defaults = None


def release_defaults():
    global _defaults
    if _defaults is None:
        with open(DEFAULTS_FILE) as stream:
            _defaults = yaml.safe_load(stream)
    return copy.deepcopy(_defaults)


def environment_version(release):
    """Fuel's version of a release: the part after the dash ("liberty-9.0" -> "9.0")."""
    version = release.version or ""
    if version == "2014.1":
        return "5.0"
    return version.rsplit("-", 1)[-1] if "-" in version else version


def parse_version(text):
    """A comparable tuple for "9.0", "10.0.1", "6.1"; non-numeric parts compare as zero."""
    parts = [int(p) if p.isdigit() else 0 for p in re.split(r"[.\-]", text or "") if p != ""]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def openstack_version(release):
    version = release.version or ""
    return version.rsplit("-", 1)[0] if "-" in version else ""


def version_key(release):
    """Order of releases: Fuel version first, then OpenStack version (numerically, 10.0 > 9.0)."""
    return (parse_version(environment_version(release)), parse_version(openstack_version(release)))


def is_newer(release, than):
    return version_key(release) > version_key(than)


def is_deployable(release, feature_groups=()):
    if release.state == "available":
        return True
    return release.state == "manageonly" and "experimental" in feature_groups


def get(release_id, lock=False):
    return get_or_404(Release, release_id, lock=lock)


def list_all():
    """Every release, newest first."""
    return sorted(db.query(Release).all(), key=version_key, reverse=True)


def check_unique(name, version, release=None):
    taken = db.query(Release.id).filter_by(name=name, version=version)
    if release is not None:
        taken = taken.filter(Release.id != release.id)
    if taken.first():
        raise errors.AlreadyExists("Release with name '{0}' and version '{1}' already exists".format(name, version))


def check_metadata(data):
    """What the release schemas cannot say of the metadata in ``data``: checked before any write,
    so a release the server accepts never breaks a cluster made from it."""
    if "attributes_metadata" in data:
        attributes.check_generated(data["attributes_metadata"].get("generated", {}))
    if "networks_metadata" in data:
        network.check_release_networks(data["networks_metadata"])
    if "network_roles_metadata" in data:
        network.check_network_roles(data["network_roles_metadata"])


def _kept_secrets(data, stored):
    """``data`` in which the mask at an editable default of a password field keeps the stored value
    (400 where none is stored): a client writes back what it read."""
    if "attributes_metadata" not in data:
        return data
    metadata = data["attributes_metadata"]
    secret = secrets.release_secrets(metadata) | secrets.release_secrets(stored)
    return dict(data, attributes_metadata=masking.unmask(metadata, stored, secret))


def create(data):
    check_unique(data["name"], data["version"])
    data = _kept_secrets(data, {})
    check_metadata(data)
    defaults = release_defaults()
    fields = {key: data[key] for key in ("name", "version", "description", "operating_system", "state")
              if key in data}
    for key in METADATA_FIELDS:
        fields[key] = copy.deepcopy(data[key]) if key in data else defaults.get(key)
    release = Release(**fields)
    db.add(release)
    db.flush()
    return release


def update(release, data, *, authorize_declassified):
    """Change ``release`` by ``data``; a change of its editable defaults that would hold a secret as a
    plain value is first shown to ``authorize_declassified(pointers)`` (see ``cluster.update_editable``)."""
    check_unique(data.get("name", release.name), data.get("version", release.version), release)
    data = _kept_secrets(data, release.attributes_metadata)
    check_metadata(data)
    if "attributes_metadata" in data:
        declassified = classify.declassified(release.attributes_metadata, data["attributes_metadata"],
                                             secrets.release_secrets)
        if declassified:
            authorize_declassified({"/attributes_metadata" + pointer for pointer in declassified})
    for key in ("name", "version", "description", "operating_system", "state") + METADATA_FIELDS:
        if key in data:
            setattr(release, key, copy.deepcopy(data[key]))
    db.flush()
    return release


def delete(release):
    if db.query(Cluster.id).filter_by(release_id=release.id).first():
        raise errors.InvalidData("Can't delete release with clusters assigned")
    db.delete(release)
    db.flush()


def secret_pointers(release):
    """The secret leaves of ``to_dict(release)``: editable defaults of password (and secret-named) fields."""
    return {"/attributes_metadata" + pointer for pointer in secrets.release_secrets(release.attributes_metadata)}


def to_dict(release):
    return {
        "id": release.id, "name": release.name, "version": release.version,
        "description": release.description, "operating_system": release.operating_system,
        "state": release.state, "modes_metadata": release.modes_metadata,
        "roles_metadata": release.roles_metadata, "attributes_metadata": release.attributes_metadata,
        "networks_metadata": release.networks_metadata,
        "network_roles_metadata": release.network_roles_metadata,
        "components_metadata": release.components_metadata,
        "is_deployable": is_deployable(release, settings["FEATURE_GROUPS"]),
        "environment_version": environment_version(release),
    }
