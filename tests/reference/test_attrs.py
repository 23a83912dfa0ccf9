"""Unit tests of ``sessionstate.reference.attrs`` (contract section 7, SessionAttr)."""

from __future__ import annotations

import pytest
import torch

from sessionstate.reference import SessionAttr, SessionState

_SHARED_DEFAULT: list[int] = []


class _Adapter:
    """A per-forward adapter keeping its scalars in the session's attrs."""

    call_count = SessionAttr(default=0, coerce=int)
    language = SessionAttr(default=None)
    history = SessionAttr(default=_SHARED_DEFAULT)

    def __init__(self, session_state: object) -> None:
        self.session_state = session_state


class _Bare:
    """An owner without any session_state attribute."""

    call_count = SessionAttr(default=0)


class TestSessionAttr:
    def test_default_when_unset(self) -> None:
        """An unset attribute reads its default, which is returned as is."""
        adapter = _Adapter(SessionState())
        assert (adapter.call_count, adapter.language) == (0, None)
        assert adapter.history is _SHARED_DEFAULT
        assert adapter.session_state.attrs == {}  # type: ignore[attr-defined]

    def test_set_coerces_into_attrs(self) -> None:
        """A write stores coerce(value) in attrs under the attribute's name."""
        session = SessionState()
        adapter = _Adapter(session)
        adapter.call_count = "3"  # type: ignore[assignment]
        assert session.attrs == {"call_count": 3}
        assert adapter.call_count == 3

    def test_no_coerce_stores_object(self) -> None:
        """Without coerce the very object is stored."""
        session, embeds = SessionState(), torch.zeros(2)
        _Adapter(session).language = embeds
        assert session.attrs["language"] is embeds

    def test_coerce_error_stores_nothing(self) -> None:
        """A coerce failure propagates and leaves attrs unchanged."""
        session = SessionState()
        with pytest.raises(ValueError):
            _Adapter(session).call_count = "three"  # type: ignore[assignment]
        assert session.attrs == {}

    def test_fresh_adapter_sees_earlier_writes(self) -> None:
        """State lives in the session, so a new adapter reads what an old one wrote."""
        session = SessionState()
        _Adapter(session).call_count = 4
        later = _Adapter(session)
        later.call_count += 1
        assert (later.call_count, session.attrs["call_count"]) == (5, 5)

    def test_session_reset_restores_default(self) -> None:
        """Clearing attrs through SessionState.reset() brings the default back."""
        session = SessionState()
        adapter = _Adapter(session)
        adapter.call_count = 9
        session.reset()
        assert adapter.call_count == 0

    def test_class_access_returns_descriptor(self) -> None:
        """Reading on the class gives the descriptor with its name, default and coerce."""
        descriptor = _Adapter.__dict__["call_count"]
        assert _Adapter.call_count is descriptor
        assert isinstance(descriptor, SessionAttr)
        assert (descriptor.name, descriptor.default, descriptor.coerce) == ("call_count", 0, int)
        assert _Adapter.__dict__["language"].coerce is None

    def test_unbound_descriptor_has_empty_name(self) -> None:
        """A descriptor not yet attached to a class has the empty name."""
        assert SessionAttr(default=1).name == ""

    def test_delete(self) -> None:
        """del removes the key; deleting an absent key is a no-op."""
        session = SessionState()
        adapter = _Adapter(session)
        adapter.call_count = 2
        session.attrs["other"] = 1
        del adapter.call_count
        assert session.attrs == {"other": 1}
        del adapter.call_count
        assert adapter.call_count == 0

    def test_no_session_state(self) -> None:
        """Get, set and delete raise AttributeError without a SessionState in _session."""
        bare = _Bare()
        match = "_Bare uses SessionAttr but has no SessionState in its '_session' attribute"
        with pytest.raises(AttributeError, match=match):
            _ = bare.call_count
        with pytest.raises(AttributeError, match=match):
            bare.call_count = 1
        with pytest.raises(AttributeError, match=match):
            del bare.call_count

    @pytest.mark.parametrize("state", [None, {}, object()])
    def test_session_state_of_wrong_type(self, state: object) -> None:
        """A session_state that is not a SessionState is refused with AttributeError."""
        with pytest.raises(AttributeError, match="_Adapter uses SessionAttr"):
            _ = _Adapter(state).call_count


class _UpstreamAdapter:
    """Upstream's convention: the adapter keeps its SessionState in ``_session``."""

    call_count = SessionAttr(default=0, coerce=int)

    def __init__(self, session: SessionState) -> None:
        self._session = session


class TestUpstreamConvention:
    def test_reads_and_writes_the_owners_session(self) -> None:
        """An upstream adapter (``self._session = manager.get_or_create_session(...)``) works
        with only its imports changed."""
        session = SessionState()
        adapter = _UpstreamAdapter(session)
        adapter.call_count = "4"  # type: ignore[assignment]
        assert session.attrs == {"call_count": 4}
        assert _UpstreamAdapter(session).call_count == 4

    def test_session_wins_over_session_state(self) -> None:
        """Both set: ``_session``, upstream's name, is the one read."""
        adapter, ours, other = _UpstreamAdapter(SessionState()), SessionState(), SessionState()
        adapter._session, adapter.session_state = ours, other  # type: ignore[attr-defined]
        adapter.call_count = 2
        assert (ours.attrs, other.attrs) == ({"call_count": 2}, {})

    def test_error_names_the_attribute_to_set(self) -> None:
        with pytest.raises(AttributeError, match="'_session'"):
            _ = _Bare().call_count
