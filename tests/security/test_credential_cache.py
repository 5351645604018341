"""The credential cache and the --add-scram syntax of scram.credentials."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_net.security import scram
from kafka_net.security.credential_cache import AddScramError, CredentialCache, read_add_scram


def test_add_scram_salts_a_credential_that_checks_the_password():
    cache = CredentialCache()
    assert cache.add_scram("SCRAM-SHA-256=[name=alice,password=alice-secret]") == "alice"
    credential = cache.get("alice", "SCRAM-SHA-256")
    assert credential.iterations == 4096
    again = scram.ScramFormatter(scram.SCRAM_SHA_256).generate_credential(
        "alice-secret", 4096, credential.salt)
    assert again == credential
    assert cache.get("alice", "SCRAM-SHA-512") is None


@pytest.mark.parametrize("spec, fields", [
    ('SCRAM-SHA-512=[name=bob,password="a,]b",iterations=8192]',
     ("SCRAM-SHA-512", "bob", "a,]b", 8192)),
    ("SCRAM-SHA-256=[ name=bob , password=x ]", ("SCRAM-SHA-256", "bob", "x", 4096)),
])
def test_fields(spec, fields):
    assert read_add_scram(spec) == fields


@pytest.mark.parametrize("spec, fragment", [
    ("alice:secret", "is not of the form"),
    ("SCRAM-SHA-1=[name=a,password=b]", "is not a SCRAM mechanism"),
    ("SCRAM-SHA-256=[password=b]", "you must supply 'name'"),
    ("SCRAM-SHA-256=[name=a]", "you must supply 'password'"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=100]", "iterations must be between"),
    ("SCRAM-SHA-256=[name=a,password=b,salt=c]", "unknown field(s) salt"),
    ("SCRAM-SHA-256=[name=a,name=b,password=b]", "'name' given twice"),
])
def test_errors(spec, fragment):
    with pytest.raises(AddScramError) as info:
        read_add_scram(spec)
    assert fragment in str(info.value)


@settings(max_examples=200)
@given(st.text(max_size=60))
def test_any_spec_reads_or_raises_add_scram_error(spec):
    try:
        read_add_scram(spec)
    except AddScramError:
        pass


@given(name=st.text(st.characters(blacklist_characters='"', blacklist_categories=("Cs",)),
                    min_size=1, max_size=15),
       password=st.text(st.characters(blacklist_characters='"', blacklist_categories=("Cs",)),
                        max_size=15))
def test_quoted_values_read_back(name, password):
    spec = f'SCRAM-SHA-256=[name="{name}",password="{password}"]'
    assert read_add_scram(spec) == ("SCRAM-SHA-256", name, password, 4096)
