"""fuel2 commands of the upgrade (octane's command lines), and the environment model's.

Registered in the ``fuelclient`` entry-point group: ``fuel2 env clone`` etc. with
python-fuelclient installed, ``fuel-ext env clone`` without it. ``env model show|edit`` are seed
000's ``environment-model-show|edit``: with ``--session`` (or ``$FUEL_SESSION``) show gives the
model with the session's staged changes and edit stages the patch in the session.
"""
from cliff import lister, show

from nailgun_platform.client import ClientMixin, PatchFileError, SessionOption, read_patch

#: the environment model's JSON patch media type (seed 000); the server takes RFC 6902's too
MODEL_MEDIA_TYPE = "application/env-model-json-patch"
ENV_COLUMNS = ("id", "status", "fuel_version", "name", "release_id", "is_customized", "changes")
RELEASE_COLUMNS = ("id", "name", "state", "operating_system", "version")
NODE_COLUMNS = ("id", "name", "status", "roles", "pending_roles", "cluster")
VIP_COLUMNS = ("id", "network", "ip_addr", "vip_name", "vip_namespace", "is_user_defined")


def _row(data, columns):
    return tuple(data.get(column) for column in columns)


def _ids(text):
    return [item.strip() for item in text.split(",") if item.strip()]


class EnvClone(ClientMixin, show.ShowOne):
    """Clone an environment into an Upgrade Seed on a newer release."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("env", type=int, help="ID of the environment to upgrade")
        parser.add_argument("name", help="name of the new environment")
        parser.add_argument("release", type=int, help="ID of the release to upgrade to")
        return parser

    def take_action(self, args):
        seed = self.client.post("clusters/{0}/upgrade/clone/".format(args.env),
                                {"name": args.name, "release_id": args.release})
        return ENV_COLUMNS, _row(seed, ENV_COLUMNS)


class EnvMoveNode(ClientMixin, lister.Lister):
    """Move nodes of the original environment into its Upgrade Seed, keeping ids and addresses.

    The nodes are listed on stdout; stderr names the provisioning task it started, which
    ``fuel2 task show`` (``/transactions/``) follows."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--no-provision", dest="provision", action="store_false", default=True,
                            help="keep the nodes' operating system (no reinstallation)")
        parser.add_argument("--roles", type=_ids, help="comma-separated roles for the moved nodes")
        parser.add_argument("env", type=int, help="ID of the Upgrade Seed environment")
        parser.add_argument("nodes", type=int, nargs="+", help="IDs of the nodes to move")
        return parser

    def take_action(self, args):
        data = {"nodes_ids": args.nodes, "reprovision": args.provision}
        if args.roles:
            data["roles"] = args.roles
        answer = self.client.post("clusters/{0}/upgrade/assign/".format(args.env), data)
        self.app.stderr.write("Nodes {0} successfully relocated to the environment {1}.\n".format(
            args.nodes, args.env))
        if isinstance(answer, dict) and answer.get("id") is not None:  # the provisioning task, unless --no-provision
            self.app.stderr.write("Provisioning task {0} is {1}: follow it with 'fuel2 task show {0}'.\n".format(
                answer["id"], answer.get("status")))
        nodes = [self.client.get("nodes/{0}/".format(node_id)) for node_id in args.nodes]
        return NODE_COLUMNS, [_row(node, NODE_COLUMNS) for node in nodes]


class EnvCopyVIPs(ClientMixin, lister.Lister):
    """Copy the VIPs of the original environment to its Upgrade Seed."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("env", type=int, help="ID of the Upgrade Seed environment")
        return parser

    def take_action(self, args):
        vips = self.client.post("clusters/{0}/upgrade/vips/".format(args.env))
        return VIP_COLUMNS, [_row(vip, VIP_COLUMNS) for vip in vips]


class ReleaseClone(ClientMixin, show.ShowOne):
    """Copy a release, keeping the network role mappings of an environment's release."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("env", type=int, help="ID of the environment to upgrade")
        parser.add_argument("release", type=int, help="ID of the release to copy")
        return parser

    def take_action(self, args):
        release = self.client.post("clusters/{0}/upgrade/clone_release/{1}/".format(args.env, args.release))
        return RELEASE_COLUMNS, _row(release, RELEASE_COLUMNS)


def _show_model(data):
    if isinstance(data, dict):
        columns = tuple(sorted(data))
        return columns, tuple(data[column] for column in columns)
    return ("value",), (data,)


class EnvModelShow(SessionOption, ClientMixin, show.ShowOne):
    """Show the model of an environment, or the section at an RFC 6901 path."""

    session_help = "show the model with the session's staged changes"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("env", type=int, help="ID of the environment")
        parser.add_argument("--path", default="/", help="RFC 6901 path of a section (default: all)")
        return parser

    def take_action(self, args):
        path = args.path.strip("/")
        model, headers = self.client.get_with_headers("clusters/{0}/model/{1}".format(args.env, path),
                                                      headers=self.session_headers(args))
        self.note_state(args, headers)
        return _show_model(model)


class EnvModelEdit(SessionOption, ClientMixin, show.ShowOne):
    """Apply an RFC 6902 JSON patch (a JSON or YAML file, - for stdin) to the model of an environment."""

    session_help = "stage the patch in this session instead of applying it"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("env", type=int, help="ID of the environment")
        parser.add_argument("file", help="file with the JSON patch (- for stdin)")
        return parser

    def take_action(self, args):
        try:
            patch = read_patch(args.file, self.app.stdin)
        except PatchFileError as exc:
            raise ValueError(str(exc))
        headers = dict(self.session_headers(args), **{"Content-Type": MODEL_MEDIA_TYPE})
        return _show_model(self.client.patch("clusters/{0}/model/".format(args.env), patch, headers=headers))


def model_label(descriptor):
    """How the commands name the environment model staged in a session (``nailgun_platform.client.documents``)."""
    return "the environment model"
