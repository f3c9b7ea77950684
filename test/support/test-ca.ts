import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A throw-away certificate authority and a server certificate it signed for 127.0.0.1 and localhost,
 * made with the `openssl` CLI (P-256, valid one day). Tests hand `caFile` to the code under test as a
 * trust anchor; production trust is never touched, and nothing ever disables verification.
 */
export interface TestCa {
  readonly dir: string
  /** PEM of the CA certificate, also written to `caFile`. */
  readonly caPem: string
  readonly caFile: string
  /** The server's certificate and private key (PEM), for `https.createServer`. */
  readonly cert: string
  readonly key: string
  remove(): void
}

const openssl = (dir: string, args: ReadonlyArray<string>) =>
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] })

const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]

export const makeTestCa = (commonName = "gateway test CA"): TestCa => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-test-ca-"))
  openssl(dir, [
    "req",
    "-x509",
    ...ecKey,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "1",
    "-subj",
    `/CN=${commonName}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign"
  ])
  openssl(dir, ["req", ...ecKey, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"])
  writeFileSync(
    join(dir, "server.ext"),
    [
      "basicConstraints=CA:FALSE",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=serverAuth",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      ""
    ].join("\n")
  )
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "1",
    "-extfile",
    "server.ext"
  ])
  const read = (file: string) => readFileSync(join(dir, file), "utf8")
  return {
    dir,
    caPem: read("ca.pem"),
    caFile: join(dir, "ca.pem"),
    cert: read("server.pem"),
    key: read("server.key"),
    remove: () => rmSync(dir, { recursive: true, force: true })
  }
}
