"""Property tests: no selector or pagination input crashes the server or leaks rows."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

USABLE = {"dmca", "naacl", "web"}
params = st.fixed_dictionaries(
    {},
    optional={
        "q": st.text(max_size=40),
        "page": st.one_of(st.integers(-5, 10**12).map(str), st.text(max_size=6)),
        "per_page": st.one_of(st.integers(-5, 500).map(str), st.text(max_size=6)),
        "type": st.text(max_size=20),
        "author": st.text(max_size=20),
        "tag": st.text(max_size=20),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=params)
def test_resource_selector_never_crashes_or_leaks(world, query: dict) -> None:
    response = world.call("GET", "/api/notebooks/resources", query_string=query)
    assert response.status_code in (200, 400), response.json
    if response.status_code == 400:
        assert response.json["code"] in ("BAD_PAGINATION", "PAGE_SIZE_TOO_LARGE")
        return
    ids = {item["resource_id"] for item in response.json["items"]}
    assert ids <= USABLE
    assert len(ids) <= min(int(query.get("per_page", 50)), 200)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=params, who=st.sampled_from(["alice", "bob", "vic", "eve"]))
def test_library_pagination_never_crashes_or_leaks(world, query: dict, who: str) -> None:
    response = world.call("GET", "/api/notebooks", who=who, query_string=query)
    assert response.status_code in (200, 400)
    if response.status_code == 200:
        assert response.json["items"] == [] or who == "alice"
