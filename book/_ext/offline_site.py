"""Sphinx extension: keep the built site free of CDN references and console errors.

sphinx-thebe (loaded by Jupyter Book) writes ``THEBE_JS_URL = "https://unpkg.com/..."`` into an
inline script on every page even when live code is off. The book has no kernel behind it (live
notebooks are offered through the Colab and Binder launch buttons instead), so the URL is blanked
in each page's script list before the page is written.
"""

from __future__ import annotations

_CDN_MARK = "https://unpkg.com/thebe"


def _strip_thebe_url(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files") or []
    # sphinx-thebe registers its inline config twice ("Identifier 'THEBE_JS_URL' has already been
    # declared" in the console): keep the first copy of each identical inline script.
    seen, unique = set(), []
    for js in scripts:
        body = getattr(js, "attributes", {}).get("body") if not isinstance(js, str) else None
        if body and not getattr(js, "filename", None):
            if body in seen:
                continue
            seen.add(body)
        unique.append(js)
    scripts[:] = unique
    for i, js in enumerate(scripts):
        body = getattr(js, "attributes", {}).get("body", "") if not isinstance(js, str) else ""
        if _CDN_MARK in body:
            start = body.index(_CDN_MARK)
            end = body.index('"', start)
            new_attrs = dict(js.attributes, body=body[:start] + body[end:])
            scripts[i] = type(js)(js.filename, **new_attrs)


def setup(app):
    app.connect("html-page-context", _strip_thebe_url)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
