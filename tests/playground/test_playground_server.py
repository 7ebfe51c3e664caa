"""The playground server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any

import pytest

from canon.playground import MAX_BODY_BYTES, PlaygroundError, PlaygroundServer, evaluate_texts
from canon.playground.examples import (
    EXAMPLE_FAILING_REASONS,
    EXAMPLE_FAILING_RESPONSE,
    EXAMPLE_INVALID_POLICY,
    EXAMPLE_MALFORMED_POLICY,
    EXAMPLE_PASSING_RESPONSE,
    EXAMPLE_POLICY,
)
from canon.playground.page import find_external_references


def _request(
    server: PlaygroundServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        all_headers = {"Host": f"127.0.0.1:{server.port}", **(headers or {})}
        connection.request(method, path, body=body, headers=all_headers)
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def _evaluate(server: PlaygroundServer, policy: str, response: str) -> tuple[int, Any]:
    body = json.dumps({"policy": policy, "response": response}).encode("utf-8")
    status, _, data = _request(
        server, "POST", "/evaluate", body, {"Content-Type": "application/json"}
    )
    return status, json.loads(data)


def test_server_listens_on_the_loopback_address_only(example_server: PlaygroundServer) -> None:
    assert example_server.url == f"http://127.0.0.1:{example_server.port}/"
    assert example_server.port > 0


def test_page_is_served_self_contained_with_a_strict_content_security_policy(
    example_server: PlaygroundServer,
) -> None:
    status, headers, body = _request(example_server, "GET", "/")
    page = body.decode("utf-8")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in headers["content-security-policy"]
    assert "connect-src 'self'" in headers["content-security-policy"]
    assert find_external_references(page) == []
    assert '<label for="policy">' in page and '<label for="response">' in page


def test_editors_hold_the_starting_texts_escaped_as_html() -> None:
    policy = EXAMPLE_POLICY.replace("playground-example", "a-b")
    response = '{"note": "</textarea><script>alert(1)</script>"}\n'
    with PlaygroundServer(policy, response) as server:
        _, _, body = _request(server, "GET", "/")
    page = body.decode("utf-8")
    assert "<script>alert(1)" not in page
    assert "&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '"policy_id": "a-b"' in page


def test_a_url_inside_an_editor_text_is_not_counted_as_an_external_reference() -> None:
    with PlaygroundServer(EXAMPLE_POLICY, '{"site": "https://example.org/x"}') as server:
        _, _, body = _request(server, "GET", "/")
    assert find_external_references(body.decode("utf-8")) == []


def test_external_reference_finder_flags_urls_scripts_and_stylesheets() -> None:
    page = (
        '<script src="https://cdn.example/x.js"></script><link href="//fonts.example/f.css">'
        "<style>@import 'other.css'; body { background: url(img.png) }</style>"
        '<link rel="icon" href="data:,"><a href="#top">top</a>'
    )
    found = " ".join(find_external_references(page))
    assert "https://cdn.example/x.js" in found
    assert "//fonts.example/f.css" in found
    assert "other.css" in found and "img.png" in found
    assert "data:," not in found and "#top" not in found


def test_evaluating_the_passing_example_returns_the_library_result(
    example_server: PlaygroundServer,
) -> None:
    status, reply = _evaluate(example_server, EXAMPLE_POLICY, EXAMPLE_PASSING_RESPONSE)
    assert status == 200
    assert reply["result"]["passed"] is True
    assert reply["result"]["policy_id"] == "playground-example"
    assert reply == evaluate_texts(EXAMPLE_POLICY, EXAMPLE_PASSING_RESPONSE)
    assert reply["text"] == json.dumps(reply["result"], sort_keys=True, indent=2) + "\n"


def test_evaluating_the_failing_example_reports_every_reason_code(
    example_server: PlaygroundServer,
) -> None:
    status, reply = _evaluate(example_server, EXAMPLE_POLICY, EXAMPLE_FAILING_RESPONSE)
    assert status == 200
    assert reply["result"]["passed"] is False
    reasons = [rule["reason_code"] for rule in reply["result"]["rule_results"]]
    assert reasons == list(EXAMPLE_FAILING_REASONS)


@pytest.mark.parametrize(
    ("policy", "response", "code"),
    [
        (EXAMPLE_MALFORMED_POLICY, EXAMPLE_PASSING_RESPONSE, "INVALID_JSON_INPUT"),
        (EXAMPLE_INVALID_POLICY, EXAMPLE_PASSING_RESPONSE, "INVALID_POLICY"),
        (EXAMPLE_POLICY, "[1, 2]", "INVALID_RESPONSE"),
        (EXAMPLE_POLICY, '{"a": 1, "\\u0061": 2}', "INVALID_JSON_INPUT"),
        (EXAMPLE_POLICY, '{"a": NaN}', "INVALID_JSON_INPUT"),
        (EXAMPLE_POLICY, "\ufeff{}", "INVALID_JSON_INPUT"),
        (EXAMPLE_POLICY, '{"a": "\\ud800"}', "INVALID_JSON_INPUT"),
    ],
)
def test_controlled_errors_come_back_as_422_with_the_library_code(
    example_server: PlaygroundServer, policy: str, response: str, code: str
) -> None:
    status, reply = _evaluate(example_server, policy, response)
    assert status == 422
    assert reply["error"]["code"] == code
    assert reply["error"]["message"]


def test_a_broken_policy_wins_over_a_broken_response(example_server: PlaygroundServer) -> None:
    _, reply = _evaluate(example_server, EXAMPLE_INVALID_POLICY, "not json")
    assert reply["error"]["code"] == "INVALID_POLICY"


def test_a_lone_surrogate_in_an_editor_is_a_controlled_error(
    example_server: PlaygroundServer,
) -> None:
    # JSON.stringify escapes a lone surrogate, so the server receives a str it cannot encode.
    body = b'{"policy": "\\ud800", "response": "{}"}'
    status, _, data = _request(
        example_server, "POST", "/evaluate", body, {"Content-Type": "application/json"}
    )
    assert status == 422
    assert json.loads(data)["error"]["code"] == "INVALID_JSON_INPUT"


def test_an_input_over_one_million_bytes_is_refused_by_the_strict_decoder(
    example_server: PlaygroundServer,
) -> None:
    big_response = '{"pad": "' + "x" * 1_000_000 + '"}'
    status, reply = _evaluate(example_server, EXAMPLE_POLICY, big_response)
    assert status == 422
    assert reply["error"]["code"] == "INVALID_JSON_INPUT"
    assert reply["error"]["message"].startswith("response ")


def test_a_request_body_over_the_cap_is_answered_413(example_server: PlaygroundServer) -> None:
    body = b" " * (MAX_BODY_BYTES + 1)
    status, _, data = _request(
        example_server, "POST", "/evaluate", body, {"Content-Type": "application/json"}
    )
    assert status == 413
    assert json.loads(data)["error"]["code"] == "REQUEST_TOO_LARGE"


def test_a_request_for_another_host_name_is_refused(example_server: PlaygroundServer) -> None:
    status, _, data = _request(example_server, "GET", "/", headers={"Host": "evil.example:80"})
    assert status == 403
    assert json.loads(data)["error"]["code"] == "FORBIDDEN_HOST"


def test_localhost_is_an_accepted_host_name(example_server: PlaygroundServer) -> None:
    host = f"localhost:{example_server.port}"
    status, _, _ = _request(example_server, "GET", "/", headers={"Host": host})
    assert status == 200


def test_an_evaluation_posted_from_a_foreign_origin_is_refused(
    example_server: PlaygroundServer,
) -> None:
    body = json.dumps({"policy": EXAMPLE_POLICY, "response": "{}"}).encode()
    headers = {"Content-Type": "application/json", "Origin": "https://evil.example"}
    status, _, data = _request(example_server, "POST", "/evaluate", body, headers)
    assert status == 403
    assert json.loads(data)["error"]["code"] == "FORBIDDEN_ORIGIN"


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b'{"policy": "{}"}', "application/json", 400),
        (b"[]", "application/json", 400),
        (b"\xff", "application/json", 400),
        (b"[" * 100_000, "application/json", 400),
        (b'{"policy": "{}", "response": "{}"}', "text/plain", 415),
    ],
)
def test_malformed_evaluation_requests_are_refused(
    example_server: PlaygroundServer, body: bytes, content_type: str, status: int
) -> None:
    answered, _, data = _request(
        example_server, "POST", "/evaluate", body, {"Content-Type": content_type}
    )
    assert answered == status
    assert json.loads(data)["error"]["code"] == "INVALID_REQUEST"


def test_unknown_paths_are_not_found(example_server: PlaygroundServer) -> None:
    assert _request(example_server, "GET", "/secret.txt")[0] == 404
    assert _request(example_server, "POST", "/save", b"{}")[0] == 404


def test_a_port_already_in_use_is_a_playground_unavailable_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(PlaygroundError) as caught:
            PlaygroundServer(EXAMPLE_POLICY, "{}", port=taken.getsockname()[1])
    assert caught.value.code == "PLAYGROUND_UNAVAILABLE"
    assert "--port" in str(caught.value)
