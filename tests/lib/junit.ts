/** Counting of test outcomes from the JUnit XML that `deno test --junit-path` writes. */

export interface Outcome {
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
}

export function emptyOutcome(): Outcome {
  return { passed: 0, failed: 0, skipped: 0, failures: [] };
}

export function addOutcome(into: Outcome, more: Outcome): void {
  into.passed += more.passed;
  into.failed += more.failed;
  into.skipped += more.skipped;
  into.failures.push(...more.failures);
}

function attr(tag: string, name: string): string {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  return m ? m[1] : "";
}

/**
 * Counts top-level test cases. Deno writes a <testcase> per test and per step (named
 * `test > step`), with a <failure> or <skipped> child unless it passed; a failed step fails its
 * test, so steps are not counted on their own.
 */
export function countJunit(xml: string): Outcome {
  const out = emptyOutcome();
  const re = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  const tops: string[] = [];
  for (const m of xml.matchAll(re)) {
    const body = m[3] ?? "";
    const raw = attr(m[1], "name");
    const file = attr(m[1], "classname");
    if (tops.some((t) => raw.startsWith(`${t} &gt; `))) continue;
    tops.push(raw);
    const name = `${file} > ${
      raw.replaceAll("&gt;", ">").replaceAll("&lt;", "<").replaceAll("&quot;", '"').replaceAll("&amp;", "&")
    }`;
    if (/<(failure|error)\b/.test(body)) {
      out.failed++;
      out.failures.push(name);
    } else if (/<skipped\b/.test(body)) {
      out.skipped++;
    } else {
      out.passed++;
    }
  }
  return out;
}
