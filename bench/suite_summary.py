"""Summarise a device test run (bench/device_suite.sh) as a markdown table for docs/reliability.md.

Reads the junit XML files of one run (one per test directory), the directory exit codes and any
fuzz lines, and prints: device, driver, date, then passed/failed/errors/skipped/timeouts per
directory and the names of everything that did not pass.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def _device_line() -> str:
    code = (
        "from cthreads import runtime; i = runtime.get_device().info; "
        "print(f'{i.name}, {i.driver_name} {i.driver_version}, Vulkan {i.api_version}')"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        return out.stdout.strip() or f"(no device: {out.stderr.strip().splitlines()[-1:]})"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(device query failed: {exc})"


def _cases(xml: Path):
    try:
        root = ET.parse(xml).getroot()
    except (ET.ParseError, OSError):
        return None
    return list(root.iter("testcase"))


def main(out_dir: str) -> int:
    out = Path(out_dir)
    rcs = {}
    extra = []
    dirs_txt = out / "dirs.txt"
    for line in dirs_txt.read_text().splitlines() if dirs_txt.exists() else []:
        if line.startswith("fuzz "):
            extra.append(line)
        elif " rc=" in line:
            name, rest = line.split(" rc=", 1)
            rcs[name] = rest.split()[0]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"Device: {_device_line()}; run {date}; validation on; `bench/device_suite.sh`\n")
    print("| directory | passed | failed | errors | skipped | timeouts | exit |")
    print("|---|---|---|---|---|---|---|")
    bad = []
    total = [0] * 5
    for name in sorted(rcs):
        cases = _cases(out / f"junit-{name}.xml")
        if cases is None:
            print(f"| {name} | — | — | — | — | — | {rcs[name]} (no report: killed?) |")
            bad.append(f"{name}: no report (exit {rcs[name]})")
            continue
        counts = [0] * 5  # passed failed errors skipped timeouts
        for case in cases:
            test = f"{name}/{case.get('classname', '')}::{case.get('name')}"
            fail = case.find("failure")
            err = case.find("error")
            if case.find("skipped") is not None:
                counts[3] += 1
            elif fail is not None or err is not None:
                node = fail if fail is not None else err
                msg = (node.get("message") or "")[:160].replace("\n", " ")
                if "Timeout" in msg:
                    counts[4] += 1
                else:
                    counts[1 if fail is not None else 2] += 1
                bad.append(f"{test}: {msg}")
            else:
                counts[0] += 1
        total = [a + b for a, b in zip(total, counts)]
        print(f"| {name} | " + " | ".join(map(str, counts)) + f" | {rcs[name]} |")
    print("| **all** | " + " | ".join(f"**{c}**" for c in total) + " | |")
    for line in extra:
        print(f"\n{line}")
    if bad:
        print("\nNot passed:\n")
        for line in bad:
            print(f"- {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/device-suite"))
