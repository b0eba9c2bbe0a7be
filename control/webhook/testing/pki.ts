/**
 * Test certificates for the webhook servers, made with openssl: a throwaway CA and serving
 * certificates for 127.0.0.1/localhost signed by it, and a writer that updates a directory the
 * way the kubelet updates a mounted Secret (new timestamped directory, `..data` symlink swapped
 * atomically, `tls.crt`/`tls.key` being symlinks through `..data`).
 */

export interface TestCa {
  dir: string;
  caPem: string;
  /** Issues a leaf for 127.0.0.1 and localhost with this CN; returns PEM cert and key. */
  issue(cn: string): Promise<{ cert: string; key: string }>;
  close(): Promise<void>;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "null", stderr: "piped" }).output();
  if (!out.success) throw new Error(`openssl ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

export async function testCa(): Promise<TestCa> {
  const dir = await Deno.makeTempDir({ prefix: "weft-webhook-pki-" });
  await openssl(
    ["req", "-x509", ...EC, "-days", "1", "-subj", "/CN=weft-test-ca", "-keyout", "ca.key", "-out", "ca.pem"],
    dir,
  );
  await Deno.writeTextFile(
    `${dir}/ext.cnf`,
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
  );
  let n = 0;
  return {
    dir,
    caPem: await Deno.readTextFile(`${dir}/ca.pem`),
    async issue(cn: string) {
      const id = `leaf${n++}`;
      await openssl(
        ["req", "-new", ...EC, "-subj", `/CN=${cn}`, "-keyout", `${id}.key`, "-out", `${id}.csr`],
        dir,
      );
      await openssl([
        "x509",
        "-req",
        "-in",
        `${id}.csr`,
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
        "-out",
        `${id}.pem`,
      ], dir);
      return {
        cert: await Deno.readTextFile(`${dir}/${id}.pem`),
        key: await Deno.readTextFile(`${dir}/${id}.key`),
      };
    },
    close: () => Deno.remove(dir, { recursive: true }),
  };
}

/**
 * Writes `files` into `dir` as the kubelet's atomic writer does. The first call creates the
 * `tls.crt -> ..data/tls.crt` links; later calls only swap `..data`, so the visible paths never
 * change and never show a half-written pair. `mtime` pins the new files' timestamps (to prove a
 * reload does not depend on them).
 */
export async function writeLikeKubelet(
  dir: string,
  files: Record<string, string>,
  mtime?: Date,
): Promise<void> {
  const stamp = `..${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  await Deno.mkdir(`${dir}/${stamp}`);
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${stamp}/${name}`, text);
    if (mtime) await Deno.utime(`${dir}/${stamp}/${name}`, mtime, mtime);
  }
  let previous: string | undefined;
  try {
    previous = await Deno.readLink(`${dir}/..data`);
  } catch {
    previous = undefined;
  }
  await Deno.symlink(stamp, `${dir}/..data_tmp`);
  await Deno.rename(`${dir}/..data_tmp`, `${dir}/..data`);
  for (const name of Object.keys(files)) {
    try {
      await Deno.lstat(`${dir}/${name}`);
    } catch {
      await Deno.symlink(`..data/${name}`, `${dir}/${name}`);
    }
  }
  if (previous) await Deno.remove(`${dir}/${previous}`, { recursive: true });
}
