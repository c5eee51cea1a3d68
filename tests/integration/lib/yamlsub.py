"""yamlsub.py - a strict parser for the block subset of YAML that deploy/
uses (python3 ships no yaml module): spaces only, consistent indentation,
"key: value" maps, "- " sequences (a map may start on the dash line), flow
lists [a, b], quoted strings, true/false, integers, comments, "---"
documents.  Anything else (anchors, flow maps, block scalars, tags) raises
through fail(), so a file the real YAML parsers would read differently is
not silently accepted.  parse(text, name) -> list of documents.
"""
import re


class YamlError(ValueError):
    pass


def fail(msg):
    raise YamlError(msg)


def scalar(s, where):
    s = s.strip()
    if s.startswith("["):
        if not s.endswith("]"):
            fail("unterminated flow list, " + where)
        inner = s[1:-1].strip()
        return [scalar(x, where) for x in inner.split(",")] if inner else []
    if s.startswith('"'):
        if len(s) < 2 or not s.endswith('"'):
            fail("unterminated string, " + where)
        return s[1:-1]
    if s.startswith("'"):
        if len(s) < 2 or not s.endswith("'"):
            fail("unterminated string, " + where)
        return s[1:-1]
    if s in ("true", "false"):
        return s == "true"
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    if s.startswith(("{", "&", "*", "|", ">", "!")):
        fail("unsupported YAML construct %r, %s" % (s, where))
    return s


def parse(text, name):
    docs = []
    lines = []
    for n, raw in enumerate(text.split("\n"), 1):
        if "\t" in raw:
            fail("%s:%d: tab character" % (name, n))
        if raw.rstrip() != raw:
            fail("%s:%d: trailing whitespace" % (name, n))
        body = raw.split(" #")[0] if not raw.lstrip().startswith("#") else ""
        if raw.lstrip().startswith("#") or not body.strip():
            continue
        if body == "---":
            docs.append(lines)
            lines = []
            continue
        ind = len(body) - len(body.lstrip(" "))
        lines.append((ind, body.strip(), "%s:%d" % (name, n)))
    docs.append(lines)

    def block(i, ind):
        if lines_[i][1].startswith("- "):
            out = []
            while i < len(lines_) and lines_[i][0] == ind and lines_[i][1].startswith("- "):
                _, text, where = lines_[i]
                item = text[2:]
                if ":" in item and not item.startswith(('"', "'")) and \
                        re.match(r"^[A-Za-z0-9_./-]+:( |$)", item):
                    # a map starting on the dash line: re-indent it
                    lines_[i] = (ind + 2, item, where)
                    v, i = block(i, ind + 2)
                    out.append(v)
                else:
                    out.append(scalar(item, where))
                    i += 1
            if i < len(lines_) and lines_[i][0] > ind:
                fail("bad indentation, " + lines_[i][2])
            return out, i
        out = {}
        while i < len(lines_) and lines_[i][0] == ind:
            _, text, where = lines_[i]
            m = re.match(r'^("[^"]+"|[A-Za-z0-9_./-]+):(?: (.*))?$', text)
            if not m:
                fail("not a 'key: value' line, " + where)
            key = m.group(1).strip('"')
            if key in out:
                fail("duplicate key %s, %s" % (key, where))
            if m.group(2) is not None and m.group(2).strip():
                out[key] = scalar(m.group(2), where)
                i += 1
            else:
                i += 1
                if i < len(lines_) and lines_[i][0] > ind:
                    out[key], i = block(i, lines_[i][0])
                elif i < len(lines_) and lines_[i][0] == ind and lines_[i][1].startswith("- "):
                    out[key], i = block(i, ind)
                else:
                    out[key] = None
        if i < len(lines_) and lines_[i][0] > ind:
            fail("bad indentation, " + lines_[i][2])
        return out, i

    res = []
    for lines_ in docs:
        if not lines_:
            continue
        if lines_[0][0] != 0:
            fail("document does not start at column 0, " + lines_[0][2])
        v, i = block(0, 0)
        if i != len(lines_):
            fail("unparsed content, " + lines_[i][2])
        res.append(v)
    return res
