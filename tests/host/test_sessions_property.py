"""Property: whatever clients do to sessions (open, stage, direct writes, deploy, abandon, expiry, reads),
no answer is a 500 and no session ever leaves a final state (deployed, invalid, abandoned, expired)."""
import datetime
import itertools

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from tests.host.test_sessions import HEADER, Toy

FINAL = {"deployed", "invalid", "abandoned", "expired"}
DOCS = st.sampled_from(["nova", "neutron", "keystone"])
SLOT = st.integers(0, 3)
ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("open")),
    st.tuples(st.just("stage"), SLOT, DOCS, st.integers(0, 2)),
    st.tuples(st.just("direct"), DOCS, st.integers(0, 2)),
    st.tuples(st.just("deploy"), SLOT),
    st.tuples(st.just("abandon"), SLOT),
    st.tuples(st.just("expire"), SLOT),
    st.tuples(st.just("read"), SLOT, DOCS),
    st.tuples(st.just("show"), SLOT),
), min_size=1, max_size=25)
_runs = itertools.count()


def _states(session):
    found = dict(session.execute(sa.text("SELECT id, state FROM config_sessions")).all())
    session.rollback()
    return found


@hypothesis_settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(actions=ACTIONS)
def test_random_session_sequences_never_500_and_final_states_stay(toy_app, session, actions):
    toy = Toy(toy_app)
    opened, ended = [], {}
    for action in actions:
        kind, args = action[0], action[1:]
        if kind == "open":
            opened.append(toy.open()["id"])
            continue
        if kind in ("direct",):
            doc, value = args
            toy.put(doc, {"value": value, "run": next(_runs)})
            continue
        if not opened:
            continue
        sid = opened[args[0] % len(opened)]
        if kind == "stage":
            answer = toy.put(args[1], {"value": args[2]}, sid, status="*")
            assert answer.status_int in (200, 403, 409), answer.text
        elif kind == "deploy":
            answer = toy.deploy(sid, status="*")
            assert answer.status_int in (200, 403, 409), answer.text
            if answer.status_int == 200:
                assert answer.json["state"] == "deployed"
        elif kind == "abandon":
            answer = toy.abandon(sid, status="*")
            assert answer.status_int in (200, 403), answer.text
        elif kind == "expire":
            past = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(seconds=1)
            session.execute(sa.text("UPDATE config_sessions SET expires_at = :past WHERE id = :id"),
                            {"past": past, "id": sid})
            session.commit()
        elif kind == "read":
            answer = toy.get(args[1], sid, status="*")
            assert answer.status_int in (200, 403), answer.text
        else:
            answer = toy.show(sid, status="*")
            assert answer.status_int in (200, 403), answer.text
        states = _states(session)
        for known, state in ended.items():
            assert states[known] == state, (known, state, states[known], action)
        ended.update({known: state for known, state in states.items() if state in FINAL and known in opened})
        assert "deploying" not in states.values()
    for sid in opened:
        assert toy.show(sid, status="*").status_int in (200, 403)
    assert toy.app.get(toy.prefix + "/deployments").status_int == 200
    assert toy.diff(opened[0]).status_int == 200 if opened else True
