"""An import-linter contract type the built-in ones lack: an allow-list of modules.

``forbidden`` contracts name what a package must not import; a new host module would be
allowed to every extension until someone remembers to forbid it. ``allowed_imports``
turns that round: every direct import, by ``source_modules`` or their descendants, of a
module inside ``checked_packages`` must be one of ``allowed_modules``. An allowed entry
is a module name, or ``name.**`` for everything below it. setup.cfg uses it to say that the
extensions import only the faces of the host and the platform (``extensions-import-faces``).
"""
from importlinter import Contract, ContractCheck, fields, output


def _matches(module, patterns):
    return any(module == p or (p.endswith(".**") and module.startswith(p[:-2])) for p in patterns)


def _inside(module, packages):
    return any(module == p or module.startswith(p + ".") for p in packages)


class AllowedImportsContract(Contract):
    type_name = "allowed_imports"

    source_modules = fields.ListField(subfield=fields.StringField())
    checked_packages = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose):
        allowed = list(self.allowed_modules)
        violations = []
        for source in self.source_modules:
            for importer in sorted({source} | graph.find_descendants(source)):
                for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                    if _inside(imported, self.checked_packages) and not _matches(imported, allowed):
                        lines = graph.get_import_details(importer=importer, imported=imported)
                        violations.append((importer, imported, [d["line_number"] for d in lines]))
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check):
        for importer, imported, line_numbers in check.metadata["violations"]:
            output.print_error("{0} imports {1} (l.{2}), which is not in allowed_modules".format(
                importer, imported, ", ".join(map(str, line_numbers))), bold=False)
            output.new_line()
