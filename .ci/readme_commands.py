"""Print a set-up command of README.md, so that CI runs exactly what a newcomer reads.

README.md marks each command with an HTML comment ``<!-- readme-command: NAME -->`` on the line before its fenced
``bash`` block: ``python3 .ci/readme_commands.py main-job`` prints that block's command. Standard library only
(it runs before anything is installed). Exit 2 when the marker or its block is missing.
"""
from __future__ import annotations

import pathlib
import re
import sys

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"<!-- readme-command: (?P<name>[\w-]+) -->\s*\n```bash\n(?P<body>.*?)\n```", re.DOTALL)


def readme_commands(text: str) -> dict[str, str]:
    """name -> command (the block's lines joined by newlines) for every marked block."""
    return {m["name"]: m["body"].strip() for m in _BLOCK.finditer(text)}


def main(argv: list[str]) -> int:
    commands = readme_commands(README.read_text(encoding="utf-8"))
    if len(argv) != 1 or argv[0] not in commands:
        print(f"usage: readme_commands.py NAME, NAME one of: {', '.join(commands) or '(no marked command)'}",
              file=sys.stderr)
        return 2
    print(commands[argv[0]])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
