from nailgun_host.extensions import BaseExtension


class ConfigDBExtension(BaseExtension):
    name = "configdb"
    version = "1.0.0"
    description = "Versioned store of serialized deployment facts, with overrides and effective values"
