// `npm test` runs this first, before the type check and the linter (about 45 s on two cores): what the
// tests need from the machine, and the command that installs what is missing, in a second rather than
// after those 45 s. vitest's own start checks for Chromium with the same function
// (test/support/chromium-check.ts), for runs of `npx vitest` without `npm test`.
//
//   node scripts/test-prerequisites.mjs    exits 1, saying what to install, when something is missing
import { accessSync, constants, existsSync, realpathSync } from "node:fs"
import { connect } from "node:net"
import { fileURLToPath, pathToFileURL } from "node:url"

/** Debian's Chromium, which the sign-in page tests drive through playwright-core (test/support/browser.ts). */
export const CHROMIUM_PATH = "/usr/bin/chromium"
export const CHROMIUM_INSTALL = "apt-get install -y chromium"

/** OpenLDAP's server and its loader, which the LDAP sign-in tests run (test/support/slapd.ts). */
export const SLAPD_PATH = "/usr/sbin/slapd"
export const SLAPADD_PATH = "/usr/sbin/slapadd"
// Without configuration: the tests write their own, in temp directories.
export const SLAPD_INSTALL =
  "echo 'slapd slapd/no_configuration boolean true' | debconf-set-selections; " +
  "DEBIAN_FRONTEND=noninteractive apt-get install -y slapd ldap-utils"

/** Prometheus's `promtool`, which checks the `/metrics` exposition (test/observability/metrics.test.ts). */
export const PROMTOOL_PATH = "/usr/bin/promtool"
export const PROMTOOL_INSTALL = "DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus"

/** The PostgreSQL database every store test also runs on (test/support/databases.ts). */
export const postgresTestUrl = process.env.GATEWAY_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const executable = (path) => {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** What to say when Chromium is missing, or undefined when it is there. */
export const missingChromium = (path = CHROMIUM_PATH) =>
  executable(path)
    ? undefined
    : `The tests need Chromium at ${path} for the browser sign-in pages, and it is not there. ` +
      `Install it with \`${CHROMIUM_INSTALL}\` (Debian), or run \`.ci/run\`, which installs it before \`npm test\`.`

/** What to say when OpenLDAP's slapd or slapadd is missing, or undefined when both are there. */
export const missingSlapd = (paths = [SLAPD_PATH, SLAPADD_PATH]) => {
  const missing = paths.filter((path) => !executable(path))
  return missing.length === 0
    ? undefined
    : `The LDAP tests need OpenLDAP's ${missing.join(" and ")}, and ${missing.length === 1 ? "it is" : "they are"} not there. ` +
        `Install ${missing.length === 1 ? "it" : "them"} with \`${SLAPD_INSTALL}\` (Debian), or run \`.ci/run\`, which installs ${missing.length === 1 ? "it" : "them"} before \`npm test\`.`
}

/** What to say when promtool is missing, or undefined when it is there. */
export const missingPromtool = (path = PROMTOOL_PATH) =>
  executable(path)
    ? undefined
    : `The metrics tests need Prometheus's promtool at ${path}, and it is not there. ` +
      `Install it with \`${PROMTOOL_INSTALL}\` (Debian), or run \`.ci/run\`, which installs it before \`npm test\`.`

/** What to say when nothing accepts connections where the PostgreSQL tests connect, or undefined. */
export const unreachablePostgres = (url = postgresTestUrl, timeoutMs = 2_000) => {
  const { hostname, port } = new URL(url)
  // A Unix socket (no host in the URL): left to the tests themselves.
  if (hostname === "") return Promise.resolve(undefined)
  const host = hostname.replace(/^\[|\]$/g, "")
  const where = `${hostname}:${port || "5432"}`
  return new Promise((done) => {
    const socket = connect({ host, port: Number(port || 5432) })
    const finish = (problem) => {
      clearTimeout(timer)
      socket.destroy()
      done(problem)
    }
    const timer = setTimeout(() => finish(`nothing answered within ${timeoutMs / 1000} s`), timeoutMs)
    socket.once("connect", () => finish(undefined))
    socket.once("error", (error) => finish(error.code ?? error.message))
  }).then((problem) =>
    problem === undefined
      ? undefined
      : `The store tests need PostgreSQL at ${where} (trust authentication, a database named \`test\`), ` +
        `and it cannot be reached (${problem}). Start it, or set GATEWAY_TEST_PG_URL to another server's URL.`
  )
}

/** Every problem the machine has for `npm test`, in the order the README lists the prerequisites. */
export const testPrerequisiteProblems = async () =>
  [missingChromium(), missingSlapd(), missingPromtool(), await unreachablePostgres()].filter(
    (problem) => problem !== undefined
  )

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const problems = await testPrerequisiteProblems()
  if (problems.length > 0) {
    process.stderr.write(`\nnpm test cannot run on this machine yet:\n\n${problems.map((p) => `- ${p}\n`).join("")}\n`)
    process.exit(1)
  }
  const conformance = fileURLToPath(
    new URL("../tools/conformance/node_modules/@modelcontextprotocol/conformance", import.meta.url)
  )
  if (!existsSync(conformance)) {
    process.stderr.write(
      "This first run installs the MCP conformance suite and the Node 24 binary it needs (about 240 MB) from npm " +
        "into tools/conformance, after the type check and the linter (test/support/conformance-tools.ts).\n"
    )
  }
}
