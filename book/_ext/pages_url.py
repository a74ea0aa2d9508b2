"""Sphinx extension: the site's public address, derived from ``repository.url`` in ``_config.yml``.

The book is published on GitHub Pages by ``.github/workflows/book.yml``; a project site of
``https://github.com/OWNER/REPO`` is served at ``https://OWNER.github.io/REPO/``. Jupyter Book passes
``repository.url`` to the theme as ``html_theme_options["repository_url"]``; this extension sets
``html_baseurl`` from it (unless set explicitly), so every page carries a canonical link to its
published copy and the one setting stays the only place the address is written.
"""

from __future__ import annotations

import re

_GITHUB = re.compile(r"^https://github\.com/(?P<owner>[A-Za-z0-9-]+)/(?P<repo>[A-Za-z0-9._-]+?)(?:\.git)?/?$")


def pages_url(repository_url: str) -> str:
    """The GitHub Pages address of the project site of ``repository_url``.

    ``https://github.com/OWNER/REPO`` gives ``https://OWNER.github.io/REPO/`` (GitHub lower-cases the
    owner in the host name). Raises ``ValueError`` naming the value when it is not a GitHub
    repository URL of that form.
    """
    match = _GITHUB.match(repository_url.strip())
    if not match:
        raise ValueError(
            f"repository.url must be https://github.com/OWNER/REPO to derive the Pages address, "
            f"got {repository_url!r}"
        )
    return f"https://{match['owner'].lower()}.github.io/{match['repo']}/"


def _set_baseurl(app, config) -> None:
    if config.html_baseurl:
        return
    url = (config.html_theme_options or {}).get("repository_url")
    if url:
        config.html_baseurl = pages_url(url)


def setup(app):
    app.connect("config-inited", _set_baseurl)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
