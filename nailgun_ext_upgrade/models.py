"""The extension's table, on the host's declarative base so the shared session sees it."""
import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from nailgun_host.public import Base
from nailgun_platform.public import now


class UpgradeRelation(Base):
    """One original cluster and its Upgrade Seed; each side takes part in one relation only.

    No foreign keys to clusters, as in Nailgun: deleting either cluster removes the row
    through ``on_cluster_delete``.
    """

    __tablename__ = "cluster_upgrade_relations"

    id: Mapped[int] = mapped_column(primary_key=True)
    orig_cluster_id: Mapped[int] = mapped_column(sa.Integer, unique=True)
    seed_cluster_id: Mapped[int] = mapped_column(sa.Integer, unique=True)
    created_at: Mapped[datetime.datetime] = mapped_column(default=now)
