"""What a ConfigDB storage driver does (seed 004's driver, for definitions and for documents).

The stores (``objects.resource_definition``, ``objects.document``) keep the domain's rules:
validation, secrets, pins, versions and their numbering, the revision and the change feed. A
driver keeps what they hand it. Every driver runs inside the host's request transaction: what it
writes outside the database must stay invisible until that transaction commits (``after_commit``)
and be harmless when it rolls back.

Definitions and the index of documents (which versions exist, their revision and author) live in
the host database for every driver: they are what the environment's row lock, If-Match, sessions
and the change feed work on. A documents driver decides where each version's content is kept.
"""
import abc


class Definitions(abc.ABC):
    """Versioned resource definitions (Tuskar's templates): rows of ``configdb_resource_definitions``."""

    @abc.abstractmethod
    def create(self, component_id, name, content, first):
        """The next version of ``name`` in the component after ``first`` (its first version, which the
        caller locked), or version 1 when ``first`` is None: never a number given before, deletes
        included; 409 when a concurrent creation took it."""

    @abc.abstractmethod
    def retrieve(self, definition_id, lock=False):
        """The live version of that id; 404 for an unknown or deleted one."""

    @abc.abstractmethod
    def retrieve_by_name(self, component_id, name, version=None):
        """The live ``version`` of ``name`` in the component, its latest when None; 404 if none."""

    @abc.abstractmethod
    def list(self, component_id=None, name=None, version=None, only_latest=False):
        """The live versions, oldest first, filtered."""

    @abc.abstractmethod
    def versions(self, lineage_id):
        """The live versions of one data source, oldest first."""

    @abc.abstractmethod
    def first_version(self, component_id, name, lock=False):
        """The first version, live or deleted, of ``name`` in the component (its lineage), or None."""

    @abc.abstractmethod
    def rename(self, definition, name, component_id):
        """Rename or move every version of ``definition``'s data source; 409 when the name is taken there."""

    @abc.abstractmethod
    def delete(self, definition):
        """Delete one version; its number stays taken."""


class Documents(abc.ABC):
    """The content of every stored version of the documents (values, overrides) of environments."""

    @abc.abstractmethod
    def write(self, environment, resource, document, stored, sealed, author):
        """Keep ``sealed`` (secret leaves already Fernet tokens) as the content of ``stored``, the new
        version of ``document`` (neither flushed yet)."""

    @abc.abstractmethod
    def fill(self, environment_id, rows):
        """Set the ``data`` of these document and version rows of the environment to their clear content."""

    @abc.abstractmethod
    def forget(self, environment_id, where, author):
        """The caller deletes the documents of the environment ``where`` (a clause over ``Document``)
        selects: forget their content."""

    @abc.abstractmethod
    def renamed(self, lineage_id, old_name, new_name):
        """The data source ``lineage_id`` is called ``new_name`` from now on (its documents stay)."""

    @abc.abstractmethod
    def drop_environment(self, environment_id):
        """The environment is deleted (when the transaction commits)."""

    @abc.abstractmethod
    def reseal(self, classifiers, lineages, dry_run, commit):
        """Renew every token and seal what ``classifiers`` (``{lineage id: classifier}``) make secret, in
        the documents of ``lineages`` (every one when None); ``{"where": values changed}``."""


class Driver(Definitions, Documents):
    """A storage driver: definitions and documents."""

    name = None
