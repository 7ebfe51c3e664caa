"""The playground's single self-contained HTML page and the checks that keep it offline."""

from __future__ import annotations

import html
import re
from functools import cache
from importlib import resources

_PLACEHOLDERS = ("__NONCE__", "__POLICY_TEXT__", "__RESPONSE_TEXT__")

# Anything that would make the browser reach beyond this page: absolute or
# protocol-relative URLs, and attributes or CSS that load a resource.
_URL = re.compile(r"""(?i)(?:\b[a-z][a-z0-9+.-]*:)?//[^\s"'<>)`]+""")
_LOADING_ATTRIBUTE = re.compile(
    r"""(?i)\b(?:src|href|action|srcset|poster)\s*=\s*["']?([^\s"'>]*)"""
)
# The look-behind keeps JavaScript's createObjectURL( and revokeObjectURL( out.
_CSS_LOAD = re.compile(r"""(?i)(?:@import|(?<![\w.])url\()\s*["']?([^\s"')]*)""")
_ALLOWED_TARGETS = ("data:", "#")
_TEXTAREA_BODY = re.compile(r"(?is)(<textarea\b[^>]*>).*?(</textarea>)")


@cache
def _template() -> str:
    return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")


def render_page(policy_text: str, response_text: str, nonce: str) -> str:
    """Fill the page template with the editor texts and the script/style nonce."""
    values = {
        "__NONCE__": html.escape(nonce),
        "__POLICY_TEXT__": html.escape(policy_text, quote=False),
        "__RESPONSE_TEXT__": html.escape(response_text, quote=False),
    }
    # One pass over the template, so a placeholder typed into an editor text stays literal.
    pattern = re.compile("|".join(re.escape(name) for name in _PLACEHOLDERS))
    return pattern.sub(lambda match: values[match.group(0)], _template())


def content_security_policy(nonce: str) -> str:
    """The CSP header: only this page's own inline code, and requests back to the server."""
    return (
        "default-src 'none'; "
        f"script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )


def find_external_references(page: str) -> list[str]:
    """List every URL or resource reference in ``page`` that would leave the page itself."""
    # Editor contents are inert text (escaped, never loaded), so a URL inside a policy
    # value is not a reference the browser would follow.
    page = _TEXTAREA_BODY.sub(r"\1\2", page)
    found = [match.group(0) for match in _URL.finditer(page)]
    for pattern in (_LOADING_ATTRIBUTE, _CSS_LOAD):
        for match in pattern.finditer(page):
            target = match.group(1)
            if not target.startswith(_ALLOWED_TARGETS):
                found.append(match.group(0))
    return sorted(set(found))
