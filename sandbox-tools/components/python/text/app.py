"""A text tool as a Python component (componentize-py): words in a text, and a key's
value in a `key=value` file under a mount. What a tool author writes in Python; built
by scripts/build-tools and tested like the Rust components."""

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def word_count(self, text: str) -> int:
        return len(text.split())

    def lookup(self, path: str, key: str) -> str | None:
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    k, sep, v = line.rstrip("\n").partition("=")
                    if sep and k.strip() == key:
                        return v.strip()
        except OSError as e:
            raise Err(f"{path}: {e.strerror or e}")
        return None
