"""Route matching follows atrium_manifest::match_route (its tests, in Python)."""

from atrium_sdk import match_route as m


def test_literal_and_placeholder_segments():
    assert m("/invoices", "/invoices") == []
    assert m("/invoices", "/invoices/") == []
    assert m("/invoices", "/invoice") is None
    assert m("/invoices/{id}", "/invoices/42") == [("id", "42")]
    assert m("/invoices/{id}", "/invoices/42?x=1") == [("id", "42")]
    assert m("/invoices/{id}", "/invoices/") is None
    assert m("/invoices/{id}", "/invoices/4/2") is None


def test_mixed_segments():
    assert m("/files/inv-{id}.pdf", "/files/inv-7.pdf") == [("id", "7")]
    assert m("/files/inv-{id}.pdf", "/files/inv-7.2.pdf") == [("id", "7.2")]
    assert m("/files/inv-{id}.pdf", "/files/inv-.pdf") is None
    assert m("/files/inv-{id}.pdf", "/files/inv-7.txt") is None
    assert m("/d/{a}-{b}", "/d/x-y-z") == [("a", "x"), ("b", "y-z")]


def test_untrusted_paths_are_bounded():
    assert m("/f/{a}", "/f/" + "x" * 1025) is None
    assert m("/f/{a}", "/f/" + "x" * 1024) == [("a", "x" * 1024)]
