import assert from "node:assert/strict";
import { runCerts } from "./main.ts";

async function openssl(args: string[]): Promise<{ code: number; out: string }> {
  const p = await new Deno.Command("openssl", { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: p.code, out: dec.decode(p.stdout) + dec.decode(p.stderr) };
}

Deno.test("certs create writes an anchor and an issuer with the chosen lifetimes, openssl agrees, and check passes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weft-certs-" });
  try {
    const out: string[] = [];
    const code = await runCerts(
      [`--out=${dir}`, "--anchor-lifetime=720h", "--issuer-lifetime=240h"],
      (l) => out.push(l),
    );
    assert.equal(code, 0, out.join("\n"));
    assert.match(
      out.join("\n"),
      /trust anchor .*ca\.crt: "CN=root\.weft\.cluster\.local" valid until \d{4}-/,
    );
    assert.match(out.join("\n"), /issuer .*issuer\.crt: "CN=identity\.weft\.cluster\.local" valid until/);
    assert.equal((await Deno.stat(`${dir}/issuer.key`)).mode! & 0o777, 0o600);
    const v = await openssl(["verify", "-CAfile", `${dir}/ca.crt`, `${dir}/issuer.crt`]);
    assert.equal(v.code, 0, v.out);
    const text = (await openssl(["x509", "-in", `${dir}/issuer.crt`, "-noout", "-text", "-enddate"])).out;
    assert.match(text, /CA:TRUE, pathlen:0/);
    assert.match(text, /ASN1 OID: prime256v1/);
    const end = Date.parse(/notAfter=(.*)/.exec(text)![1]);
    assert.ok(Math.abs(end - (Date.now() + 10 * 86_400_000)) < 120_000, "issuer lifetime 10d");

    const ok: string[] = [];
    assert.equal(
      await runCerts([
        "check",
        `--anchors=${dir}/ca.crt`,
        `--issuer=${dir}/issuer.crt`,
        `--issuer-key=${dir}/issuer.key`,
        "--threshold=120h",
      ], (l) => ok.push(l)),
      0,
      ok.join("\n"),
    );
    assert.match(ok.join("\n"), /issuer chains to a trust anchor and its key matches/);

    // A new issuer for the same anchor (rotation) leaves the anchor alone.
    const before = await Deno.readTextFile(`${dir}/ca.crt`);
    const rot: string[] = [];
    assert.equal(
      await runCerts([
        `--out=${dir}/rotated`,
        `--anchor-cert=${dir}/ca.crt`,
        `--anchor-key=${dir}/ca.key`,
        "--issuer-lifetime=120h",
      ], (l) => rot.push(l)),
      0,
      rot.join("\n"),
    );
    await assert.rejects(Deno.stat(`${dir}/rotated/ca.crt`));
    assert.equal(await Deno.readTextFile(`${dir}/ca.crt`), before);
    assert.equal(
      (await openssl(["verify", "-CAfile", `${dir}/ca.crt`, `${dir}/rotated/issuer.crt`])).code,
      0,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("certs check exits non-zero when the issuer or an anchor expires within the threshold, or the issuer is not chained", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weft-certs-check-" });
  const other = await Deno.makeTempDir({ prefix: "weft-certs-other-" });
  try {
    assert.equal(
      await runCerts([`--out=${dir}`, "--anchor-lifetime=9600h", "--issuer-lifetime=480h"], () => {}),
      0,
    );
    assert.equal(await runCerts([`--out=${other}`], () => {}), 0);
    const soon: string[] = [];
    assert.equal(
      await runCerts(
        ["check", `--anchors=${dir}/ca.crt`, `--issuer=${dir}/issuer.crt`, "--threshold=720h"],
        (l) => soon.push(l),
      ),
      1,
    );
    assert.match(
      soon.join("\n"),
      /WARNING: issuer "CN=identity\.weft\.cluster\.local" expires within 720h: rotate it/,
    );
    const anchorSoon: string[] = [];
    assert.equal(
      await runCerts(["check", `--anchors=${dir}/ca.crt`, "--threshold=12000h"], (l) => anchorSoon.push(l)),
      1,
    );
    assert.match(
      anchorSoon.join("\n"),
      /WARNING: trust anchor "CN=root\.weft\.cluster\.local" expires within 12000h/,
    );
    const unchained: string[] = [];
    assert.equal(
      await runCerts(
        ["check", `--anchors=${other}/ca.crt`, `--issuer=${dir}/issuer.crt`, "--threshold=24h"],
        (l) => unchained.push(l),
      ),
      1,
    );
    assert.match(
      unchained.join("\n"),
      /ERROR: issuer "CN=identity\.weft\.cluster\.local" is not signed by any trust anchor/,
    );
    const usage: string[] = [];
    assert.equal(await runCerts(["check"], (l) => usage.push(l)), 2);
    assert.match(usage.join("\n"), /check needs --anchors=PATH/);
    // Durations are Go's: no day unit, and the refusal says how to write one.
    const days: string[] = [];
    assert.equal(
      await runCerts(["check", `--anchors=${dir}/ca.crt`, "--threshold=60d"], (l) => days.push(l)),
      2,
    );
    assert.match(
      days.join("\n"),
      /--threshold: "60d" is not a duration \(unknown unit "d": Go durations have no days, write 24h for 1d\)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});
