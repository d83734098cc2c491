#!/usr/bin/env python3
"""Lists a crate's public items whose doc comment has no code example.

Usage: scripts/doc-examples.py CRATE_SRC_DIR   (e.g. tang-nn/src)

A public item is a `pub` fn / struct / enum / trait / type / const / static / union, a
`#[macro_export]` macro, a `pub fn` in an inherent `impl` block, or a method, associated
const or associated type declared in a `pub trait`, provided users can reach it: its
module path is `pub` all the way from the crate root, or its name (or its enclosing
type's, for methods, or its inline module's) is named by a `pub use` somewhere in the
crate. Not counted: `pub(crate)` / `pub(super)` / `pub(in ..)` items, items in
`#[cfg(test)]` modules, `#[doc(hidden)]` items and modules, `#[cfg(doctest)]` items,
struct fields and enum variants (the type's example covers them), methods of trait impls
(they inherit the trait's documentation), and methods that a `macro_rules!` generates
(the checker does not expand macros: give their invocations examples by hand). An
example is a fenced code block (```) in the item's own doc comment, other than ```text.

Prints, per file, the items without an example, then "N public items, M with an example".
Exits 1 when any item lacks one, so the script can run as a check.
"""

import os
import re
import sys

ITEM = re.compile(
    r"^\s*pub\s+(?:const\s+|async\s+|unsafe\s+|extern\s+\"[^\"]*\"\s+)*"
    r"(fn|struct|enum|trait|type|const|static|union)\s+([A-Za-z_][A-Za-z0-9_]*)"
)
TRAIT_METHOD = re.compile(
    r"^\s*(?:const\s+|async\s+|unsafe\s+)*fn\s+([A-Za-z_][A-Za-z0-9_]*)"
)
TRAIT_ASSOC = re.compile(r"^\s*(const|type)\s+([A-Za-z_][A-Za-z0-9_]*)\s*[:;=]")
MACRO = re.compile(r"^\s*macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)")
IMPL = re.compile(r"^\s*impl\b(.*)")
MOD_DECL = re.compile(r"^\s*(pub\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")
INLINE_MOD = re.compile(r"^\s*(pub\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")
PUB_USE = re.compile(r"^\s*pub\s+use\s+([^;]*);", re.S)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip_strings_and_comments(line):
    """The line without string/char literals and `//` comments, for brace counting."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(?:\\.|[^'\\])'", "''", line)
    return line.split("//", 1)[0]


def has_example(doc_lines):
    """Whether a doc comment holds a fenced code block that is not ```text."""
    open_fence = False
    for line in doc_lines:
        text = line.strip()
        if not text.startswith("```"):
            continue
        if open_fence:
            open_fence = False
            continue
        open_fence = True
        info = text[3:].strip()
        if not info.startswith("text"):
            return True
    return False


def module_files(src):
    """Maps each .rs file to whether its module is `pub` from the crate root."""
    public = {}

    def walk(path, is_pub):
        public[path] = is_pub
        directory = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem not in ("lib", "main", "mod"):
            directory = os.path.join(directory, stem)
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = MOD_DECL.match(line)
                if not m:
                    continue
                name = m.group(2)
                for candidate in (
                    os.path.join(directory, name + ".rs"),
                    os.path.join(directory, name, "mod.rs"),
                ):
                    if os.path.exists(candidate):
                        walk(candidate, is_pub and bool(m.group(1)))
                        break

    root = os.path.join(src, "lib.rs")
    if not os.path.exists(root):
        root = os.path.join(src, "main.rs")
    walk(root, True)
    return public


def reexported_names(files):
    """Every identifier named by a `pub use` in the crate (an over-approximation)."""
    names = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"(?m)^\s*pub\s+use\s+([^;]*);", text):
            names.update(IDENT.findall(m.group(1)))
    return names


def impl_self_type(header):
    """The type an `impl` header is for, and whether it is a trait impl."""
    header = re.sub(r"^\s*<[^{]*?>\s*", "", header)  # generics of the impl
    header = header.split("{", 1)[0].split(" where ", 1)[0]
    if re.search(r"\bfor\b", header):
        return None, True
    m = IDENT.search(header)
    return (m.group(0) if m else None), False


def scan(path, file_public, exported):
    """Yields (line, kind, name, has_example) for the public items of one file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")

    depth = 0
    # Each block: (depth inside it, kind, info). Kinds: "test", "mod", "impl", "trait", "other".
    blocks = []
    doc = []
    attrs = []
    in_attr = 0  # bracket depth of a multi-line attribute
    pending = None  # a block opener whose `{` is on a later line (a `where` clause)
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if in_attr:
            attrs[-1] += stripped
            in_attr += stripped.count("[") - stripped.count("]")
            in_attr = max(in_attr, 0)
            continue
        if stripped.startswith("///"):
            doc.append(stripped[3:])
            continue
        if stripped.startswith("#[") or stripped.startswith("#!["):
            attrs.append(stripped)
            in_attr = stripped.count("[") - stripped.count("]")
            continue
        if stripped.startswith("//") or stripped == "":
            continue

        code = strip_strings_and_comments(raw)
        in_test = any(b[1] == "test" for b in blocks)
        hidden = any("doc(hidden)" in a or "cfg(doctest)" in a for a in attrs)
        inner = blocks[-1] if blocks else None
        opener = pending
        pending = None

        # Visibility of the scope we are in.
        scope_public = file_public
        for b in blocks:
            if b[1] == "mod":
                scope_public = b[2]

        m_mod = INLINE_MOD.match(raw)
        m_impl = IMPL.match(raw)
        m_item = ITEM.match(raw)
        m_macro = MACRO.match(raw)
        if m_mod:
            name = m_mod.group(2)
            if any(a.startswith("#[cfg(test)]") for a in attrs) or hidden:
                # Test modules and hidden modules hold nothing users see.
                opener = ("test", None)
            else:
                opener = ("mod", bool(m_mod.group(1)) and (scope_public or name in exported))
        elif m_impl and not in_test:
            header = raw
            k = number
            while "{" not in header and k < len(lines):
                header += " " + lines[k]
                k += 1
            self_type, is_trait_impl = impl_self_type(m_impl.group(1) + header[len(raw):])
            opener = ("impl", (self_type, is_trait_impl))
        elif m_item and not in_test:
            kind, name = m_item.group(1), m_item.group(2)
            inside_impl = inner is not None and inner[1] == "impl"
            if inside_impl:
                self_type, is_trait_impl = inner[2]
                public = not is_trait_impl and self_type is not None and (
                    scope_public or self_type in exported
                )
                label = f"{self_type}::{name}"
            else:
                public = scope_public or name in exported
                label = name
            if public and not hidden:
                yield number, kind, label, has_example(doc)
            if kind == "trait":
                opener = ("trait", (name, public and not hidden))
        elif m_macro and not in_test:
            name = m_macro.group(1)
            if any("macro_export" in a for a in attrs) and not hidden:
                yield number, "macro", name + "!", has_example(doc)
        elif (
            inner is not None
            and inner[1] == "trait"
            and inner[2][1]
            and depth == inner[0]
            and not hidden
            and (TRAIT_METHOD.match(raw) or TRAIT_ASSOC.match(raw))
        ):
            # A method, const or type declared by a public trait.
            m_method = TRAIT_METHOD.match(raw)
            kind, name = ("fn", m_method.group(1)) if m_method else TRAIT_ASSOC.match(raw).groups()
            yield number, kind, f"{inner[2][0]}::{name}", has_example(doc)

        # Brace tracking: the first `{` of an opener line opens its block.
        for ch in code:
            if ch == "{":
                depth += 1
                if opener is not None:
                    blocks.append((depth, opener[0], opener[1]))
                    opener = None
                else:
                    blocks.append((depth, "other", None))
            elif ch == "}":
                if blocks and blocks[-1][0] == depth:
                    blocks.pop()
                depth -= 1
            elif ch == ";" and opener is not None and depth == (blocks[-1][0] if blocks else 0):
                opener = None  # `mod x;`, `fn f();`: no block
        if opener is not None and opener[0] in ("impl", "mod", "test", "trait"):
            pending = opener
        doc = []
        attrs = []


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split("\n")[2], file=sys.stderr)
        return 2
    src = sys.argv[1]
    files = module_files(src)
    exported = reexported_names(files)
    total = documented = 0
    for path in sorted(files):
        missing = []
        for number, kind, name, example in scan(path, files[path], exported):
            total += 1
            if example:
                documented += 1
            else:
                missing.append(f"  {number}: {kind} {name}")
        if missing:
            print(os.path.relpath(path))
            print("\n".join(missing))
    print(f"{total} public items, {documented} with an example")
    return 0 if total == documented else 1


if __name__ == "__main__":
    sys.exit(main())
