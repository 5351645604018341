"""SslPrincipalMapper (ssl.principal.mapping.rules): Kafka's rule syntax and the
RFC 2253 DN that DEFAULT gives, from getpeercert()'s subject."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_net.config import ConfigError
from kafka_net.network.ssl_principal_mapper import SslPrincipalMapper, distinguished_name
from kafka_net.network.transport_layer import SslAuthenticationException

CERT = {"subject": ((("countryName", "US"),), (("organizationName", "kafka-net"),),
                    (("organizationalUnitName", "tests"),), (("commonName", "alice"),))}


def test_default_is_the_full_dn_most_specific_first():
    assert distinguished_name(CERT) == "CN=alice,OU=tests,O=kafka-net,C=US"
    assert SslPrincipalMapper("DEFAULT").get_name(CERT) == "CN=alice,OU=tests,O=kafka-net,C=US"


def test_special_characters_are_escaped_as_rfc_2253_says():
    cert = {"subject": ((("commonName", 'a,b+c"d'),), (("organizationName", " lead"),))}
    assert distinguished_name(cert) == 'O=\\ lead,CN=a\\,b\\+c\\"d'


@pytest.mark.parametrize("rules, expected", [
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/L,DEFAULT", "alice@tests"),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1/U", "ALICE"),
    ("RULE:^CN=bob,.*$/bob/,DEFAULT", "CN=alice,OU=tests,O=kafka-net,C=US"),
    ("  RULE:^.*CN=([a-z]+).*$/user-$1/ , DEFAULT ", "user-alice"),
])
def test_rules_apply_in_order(rules, expected):
    assert SslPrincipalMapper(rules).get_name(CERT) == expected


def test_no_rule_applying_fails_the_authentication():
    with pytest.raises(SslAuthenticationException, match="No rules apply to CN=alice"):
        SslPrincipalMapper("RULE:^CN=bob$/bob/").get_name(CERT)


@pytest.mark.parametrize("rules", ["", "NOPE", "RULE:abc", "RULE:(/x/", "DEFAULT,RULE:x/y/Q"])
def test_bad_rules_are_a_config_error_naming_the_key(rules):
    with pytest.raises(ConfigError, match="^ssl.principal.mapping.rules: "):
        SslPrincipalMapper(rules)


@given(st.text(max_size=40))
def test_any_rules_text_parses_or_is_a_config_error(rules):
    try:
        SslPrincipalMapper(rules)
    except ConfigError:
        pass
