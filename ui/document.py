"""The app's page as one HTML document of its own: the Blocks' layout and components (Gradio's config, as its own
page reads it) drawn as plain elements, with the viewer's page (anatomy/viewer/page.js), its CSS and the events'
table that the page's client (ui/static/client.js) runs through Gradio's queue. Gradio stays the server: its events,
its queue, its sessions; none of its page's scripts load.

Each component's element carries `data-block` (its id in the config) and the component's elem_id; a form control
carries the label Gradio's own page gave it, so that a visitor (and a test) finds it by its label.
"""
from __future__ import annotations

import html
import json
from functools import lru_cache
from pathlib import Path

from anatomy import bundle

STATIC = Path(__file__).resolve().parent / "static"
# what the page's client needs of each component (ui/static/client.js `fields`) and of each event
_PROPS = ("type", "choices", "minimum", "maximum", "value")
_EVENT = ("id", "targets", "inputs", "outputs", "backend_fn", "js", "trigger_after", "trigger_only_on_success",
          "show_progress", "show_progress_on", "trigger_mode")


def _attr(name: str, value) -> str:
    return f' {name}="{html.escape(str(value), quote=True)}"'


def _opening(tag: str, block: int, props: dict, kind: str, extra: str = "", more: tuple[str, ...] = ()) -> str:
    """An element's opening tag: its block id, elem_id, classes (the kind's, `more` and the component's own),
    visibility."""
    classes = " ".join([f"app-{kind}", *more, *(props.get("elem_classes") or [])])
    elem_id = _attr("id", props["elem_id"]) if props.get("elem_id") else ""
    hidden = " hidden" if props.get("visible") is False else ""
    return f'<{tag} data-block="{block}"{elem_id}{_attr("class", classes)}{hidden}{extra}>'


def _label(props: dict, target: str) -> str:
    """A control's label (for the element `target`) and its info line, as Gradio's page shows them."""
    label = f'<label class="anatomy-label" for="{target}">{html.escape(props["label"])}</label>' \
        if props.get("label") else ""
    return label + (f'<span class="anatomy-info">{html.escape(props["info"])}</span>' if props.get("info") else "")


def _choices(kind: str, block: int, props: dict) -> str:
    """A radio's or a checkbox group's choices, each a labelled input."""
    value = props.get("value")
    chosen = set(value) if isinstance(value, list) else {value}
    return "".join(f'<label class="anatomy-choice"><input type="{kind}" name="block-{block}"{_attr("value", v)}'
                   f'{" checked" if v in chosen else ""}><span>{html.escape(str(name))}</span></label>'
                   for name, v in props.get("choices") or [])


def component_html(block: int, kind: str, props: dict, children: str = "") -> str:
    """One block of the layout as the page's own HTML."""
    target = f"block-{block}-input"
    label = props.get("label") or ""
    if kind in ("row", "column", "form"):
        style = f' style="flex: {props["scale"]} 1 0%; min-width: min({props.get("min_width", 320)}px, 100%)"' \
            if kind == "column" and props.get("scale") else ""
        return _opening("div", block, props, kind, style) + children + "</div>"
    if kind == "accordion":
        return (_opening("details", block, props, kind, " open" if props.get("open") else "") +
                f'<summary>{html.escape(label)}</summary><div class="anatomy-accordion-body">{children}</div>'
                "</details>")
    if kind == "html":
        return _opening("div", block, props, kind) + str(props.get("value") or "") + "</div>"
    if kind == "textbox":
        lines = int(props.get("lines") or 1)
        placeholder = _attr("placeholder", props["placeholder"]) if props.get("placeholder") else ""
        return (_opening("div", block, props, kind) + _label(props, target) +
                f'<textarea id="{target}" rows="{lines}"{placeholder}'
                f'{_attr("data-lines", lines)}>{html.escape(str(props.get("value") or ""))}</textarea></div>')
    if kind == "dropdown":
        value = props.get("value")
        options = "".join(f'<option{_attr("value", v)}{" selected" if v == value else ""}>{html.escape(str(name))}'
                          "</option>" for name, v in props.get("choices") or [])
        return (_opening("div", block, props, kind) + _label(props, target) +
                f'<select id="{target}">{options}</select></div>')
    if kind == "slider":
        bounds = "".join(_attr(k, props[p]) for k, p in (("min", "minimum"), ("max", "maximum"), ("step", "step"),
                                                         ("value", "value")))
        return (_opening("div", block, props, kind) +
                f'<div class="anatomy-slider-head">{_label(props, target)}'
                f'<input type="number" id="{target}"{bounds}{_attr("aria-label", "number input for " + label)}>'
                f'</div><input type="range"{bounds}{_attr("aria-label", "range slider for " + label)}></div>')
    if kind in ("radio", "checkboxgroup"):
        info = f'<span class="anatomy-info">{html.escape(props["info"])}</span>' if props.get("info") else ""
        return (_opening("fieldset", block, props, kind) + f'<legend class="anatomy-label">{html.escape(label)}'
                f"</legend>{info}<div class=\"anatomy-choices\">"
                f'{_choices("radio" if kind == "radio" else "checkbox", block, props)}</div></fieldset>')
    if kind == "button":
        variant = props.get("variant") or "secondary"
        more = ("anatomy-button", f"app-{variant}", f"app-{props.get('size') or 'lg'}")
        return (_opening("button", block, props, kind, _attr("type", "button"), more) +
                html.escape(str(props.get("value") or "")) + "</button>")
    if kind == "file":
        return (_opening("div", block, props, kind) + f'<span class="anatomy-label">{html.escape(label)}</span>'
                '<div class="anatomy-file-link"></div></div>')
    if kind == "json":
        return _opening("div", block, props, kind) + "</div>"
    if kind == "state":
        return ""
    raise ValueError(f"the page draws no {kind!r} component (block {block})")


def blocks_html(config: dict) -> str:
    """The config's layout, every block drawn as component_html draws it."""
    components = {c["id"]: c for c in config["components"]}

    def drawn(node: dict) -> str:
        children = "".join(drawn(child) for child in node.get("children") or [])
        if node["id"] not in components:  # the root
            return children
        component = components[node["id"]]
        return component_html(node["id"], component["type"], component["props"], children)

    return drawn(config["layout"])


def events(config: dict) -> dict:
    """What the page's client runs: each component's type and what it starts with, and every event of the page
    (the API's endpoints, which no page event triggers, left out)."""
    components = {c["id"]: {k: v for k, v in {**c["props"], "type": c["type"]}.items() if k in _PROPS}
                  for c in config["components"]}
    wired = [{k: d.get(k) for k in _EVENT} for d in config["dependencies"] if d["targets"]]
    return {"components": components, "dependencies": wired}


@lru_cache(maxsize=1)
def _template() -> str:
    return (STATIC / "page.html").read_text(encoding="utf-8")


def script_json(value) -> str:
    """JSON that a <script> element holds as it is: no `</` to end the element early."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def document(config: dict, title: str, options: dict, head: str = "") -> str:
    """The app's page: the config's blocks, the viewer's CSS (anatomy/viewer) after the app's (static/app.css), its
    script with the page's client and app.js given `options` (what app.js passes the viewer's page), and the
    events' table."""
    css = bundle.style() + (STATIC / "app.css").read_text(encoding="utf-8")
    script = (bundle.script("page", str(STATIC / "client.js")) +
              f"({(STATIC / 'app.js').read_text(encoding='utf-8')})(viewer_page, viewer_client, "
              "JSON.parse(document.getElementById('anatomy-options').textContent), "
              "JSON.parse(document.getElementById('anatomy-events').textContent));\n")
    parts = {"TITLE": html.escape(title), "HEAD": head, "STYLE": css, "BODY": blocks_html(config),
             "OPTIONS": script_json(options), "EVENTS": script_json(events(config)), "SCRIPT": script}
    text = _template()
    for name, value in parts.items():
        text = text.replace(f"<!--{name}-->", value)
    return text
