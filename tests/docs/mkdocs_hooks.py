"""MkDocs hook of the documentation site (mkdocs.yml: hooks).

The pages live in docs/ and link to files of the repository outside it
(`../tests/requirements.txt`, `../examples/torchrl/`), which the site does not
hold. Each such link must name a file or folder that exists in the
repository, or the build fails naming the page and the link; the link then
becomes its text, the path set as code, as in the installed documentation
(cmake/TensorclassInstallDocs.cmake). Links between pages, and their
anchors, are MkDocs' own to check (validation: in mkdocs.yml, --strict).
"""
import pathlib
import re

from mkdocs.exceptions import PluginError

_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def on_page_markdown(markdown, page, config, files):
    docs = pathlib.Path(config["docs_dir"]).resolve()
    repo = pathlib.Path(config["config_file_path"]).resolve().parent
    page_dir = (docs / page.file.src_path).parent
    out, in_code = [], False
    for number, line in enumerate(markdown.split("\n"), 1):
        if _FENCE.match(line.lstrip()):
            in_code = not in_code
        if not in_code:
            line = _LINK.sub(lambda m: _outside(m, page, number, page_dir, docs, repo), line)
        out.append(line)
    return "\n".join(out)


def _outside(match, page, number, page_dir, docs, repo):
    text, target = match.group(1), match.group(2)
    if re.match(r"^([A-Za-z][A-Za-z0-9+.-]*:|#|/)", target):
        return match.group(0)
    path = target.split("#", 1)[0]
    resolved = (page_dir / path).resolve()
    if resolved == docs or docs in resolved.parents:
        return match.group(0)
    if repo not in resolved.parents or not resolved.exists():
        raise PluginError(f"docs/{page.file.src_path}:{number}: the link to {target} names no file of the repository")
    if re.fullmatch(r"[^ \t`]+", text) and re.search(r"[/.]", text):
        text = f"`{text}`"
    return text
