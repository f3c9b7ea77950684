import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import {
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Redacted } from "effect"
import { Client, type Entry } from "ldapts"
import { missingSlapd, SLAPADD_PATH, SLAPD_PATH } from "../../scripts/test-prerequisites.mjs"
import type { LdapSettings } from "../../src/identity/ldap/settings.js"
import { freePort } from "./gateway-process.js"

/**
 * A real OpenLDAP server for the LDAP sign-in tests, started as a child process in a temp directory on
 * free loopback ports and seeded with a small directory (below). Certificates come from the `openssl`
 * CLI: a CA, a server certificate for 127.0.0.1 and localhost, one for localhost only (name checks),
 * and a second, unrelated CA (trust checks). Nothing here turns certificate verification off.
 *
 * Kinds of server:
 * - `verified`: ldap:// and ldaps:// with the 127.0.0.1/localhost certificate and `security tls=1`,
 *   so the server itself refuses anything but StartTLS on ldap://;
 * - `localhost-only`: the same with the certificate naming only localhost;
 * - `none`: ldap:// without any TLS, so StartTLS fails.
 *
 * `allow bind_anon_dn` makes a bind with a DN and an empty password succeed (as an anonymous bind), as
 * on many real servers: the case the sign-in must refuse before it ever asks.
 */
// Where slapd is looked for and what to say when it is missing: shared with `npm test`'s first check.
const requireSlapd = () => {
  const problem = missingSlapd()
  if (problem !== undefined) throw new Error(problem)
}

export const BASE_DN = "dc=example,dc=test"
export const PEOPLE_DN = `ou=people,${BASE_DN}`
export const GROUPS_DN = `ou=groups,${BASE_DN}`
export const POSIX_GROUPS_DN = `ou=posix,${BASE_DN}`
export const SERVICE_DN = `cn=gateway,ou=services,${BASE_DN}`
export const SERVICE_PASSWORD = "service-password-1"
const ROOT_DN = `cn=admin,${BASE_DN}`
const ROOT_PASSWORD = "root-password-1"

export interface DirectoryUser {
  readonly dn: string
  readonly uid: string
  readonly password: string
  /** The `cn` of entries named by it (the RDN's value); others get their display name or uid. */
  readonly cn?: string
  readonly displayName?: string
  readonly employeeNumber?: string
  /** Raw bytes in `audio` (octet string): a binary "stable id" for the binary-id test. */
  readonly audio?: Buffer
  readonly groups: ReadonlyArray<string>
}

const person = (rdn: string, user: Omit<DirectoryUser, "dn">): DirectoryUser => ({ dn: `${rdn},${PEOPLE_DN}`, ...user })

/** The binary "stable id" of `binary` (not UTF-8), in `audio`, an octet-string attribute. */
export const BINARY_ID = Buffer.from("fffe00c3289f0a1b2c3d4e5f60718293", "hex")

/** 257 groups, one more than a sign-in accepts. */
export const BULK_GROUPS = Array.from({ length: 257 }, (_, index) => `bulk-${String(index).padStart(3, "0")}`)

export const USERS = {
  alice: person("uid=alice", {
    uid: "alice",
    password: "alice-password-1",
    displayName: "Alice Liddell",
    employeeNumber: "E-1001",
    groups: ["engineering", "operators"]
  }),
  bob: person("uid=bob", {
    uid: "bob",
    password: "bob-password-1",
    displayName: "Bob Builder",
    groups: ["engineering", "auditors"]
  }),
  dave: person("uid=dave", { uid: "dave", password: "dave-password-1", groups: [] }),
  twinOne: person("cn=Twin One", { uid: "twin", cn: "Twin One", password: "twin-password-1", groups: [] }),
  twinTwo: person("cn=Twin Two", { uid: "twin", cn: "Twin Two", password: "twin-password-2", groups: [] }),
  many: person("uid=many", { uid: "many", password: "many-password-1", groups: BULK_GROUPS }),
  // Every character a DN and a filter treat specially: the {{dn}} group search must escape them.
  kim: person("cn=Kim O'Hara\\, Ops (night) \\2A", {
    uid: "kim",
    cn: "Kim O'Hara, Ops (night) *",
    password: "kim-password-1",
    displayName: "Kim O'Hara",
    groups: ["operators"]
  }),
  juergen: person("uid=jürgen", {
    uid: "jürgen",
    password: "jürgen-pässwörd",
    displayName: "Jürgen Groß",
    groups: ["engineering"]
  }),
  binary: person("uid=binary", {
    uid: "binary",
    password: "binary-password-1",
    audio: BINARY_ID,
    groups: []
  })
} as const satisfies Record<string, DirectoryUser>

/** posixGroup `developers` lists alice by name (`memberUid`): the {{username}} group search. */
export const POSIX_DEVELOPERS = ["alice"]

type Value = string | Buffer
type Attributes = Record<string, Value | ReadonlyArray<Value> | undefined>

/** RFC 2849 "safe strings" (ASCII without NUL, CR, LF; no leading space, colon or "<"); others are written base64. */
const safeString = (text: string) =>
  [...text].every((char) => {
    const code = char.charCodeAt(0)
    return code > 0 && code < 0x80 && code !== 0x0a && code !== 0x0d
  }) &&
  !/^[ :<]/.test(text) &&
  !text.endsWith(" ")

const ldifLine = (name: string, value: Value) =>
  typeof value === "string" && safeString(value)
    ? `${name}: ${value}`
    : `${name}:: ${Buffer.from(value).toString("base64")}`

const ldifEntry = (dn: string, attributes: Attributes) =>
  [
    ldifLine("dn", dn),
    ...Object.entries(attributes).flatMap(([name, values]) =>
      values === undefined
        ? []
        : (Array.isArray(values) ? values : [values]).map((value: Value) => ldifLine(name, value))
    )
  ].join("\n")

const seedLdif = (): string => {
  const users = Object.values(USERS) as ReadonlyArray<DirectoryUser>
  const groupNames = [...new Set(users.flatMap((user) => user.groups))]
  const entries = [
    ldifEntry(BASE_DN, { objectClass: ["dcObject", "organization"], dc: "example", o: "Example" }),
    ...["people", "groups", "posix", "services"].map((ou) =>
      ldifEntry(`ou=${ou},${BASE_DN}`, { objectClass: "organizationalUnit", ou })
    ),
    ldifEntry(SERVICE_DN, {
      objectClass: ["organizationalRole", "simpleSecurityObject"],
      cn: "gateway",
      userPassword: SERVICE_PASSWORD
    }),
    ...users.map((user) =>
      ldifEntry(user.dn, {
        objectClass: "inetOrgPerson",
        cn: user.cn ?? user.displayName ?? user.uid,
        sn: user.uid,
        uid: user.uid,
        userPassword: user.password,
        displayName: user.displayName,
        employeeNumber: user.employeeNumber,
        audio: user.audio
      })
    ),
    ...groupNames.map((group) =>
      ldifEntry(`cn=${group},${GROUPS_DN}`, {
        objectClass: "groupOfNames",
        cn: group,
        member: users.filter((user) => user.groups.includes(group)).map((user) => user.dn)
      })
    ),
    ldifEntry(`cn=developers,${POSIX_GROUPS_DN}`, {
      objectClass: "posixGroup",
      cn: "developers",
      gidNumber: "5000",
      memberUid: POSIX_DEVELOPERS
    })
  ]
  return `${entries.join("\n\n")}\n`
}

export interface LdapCertificates {
  readonly dir: string
  /** The CA that signed both server certificates. */
  readonly caPem: string
  /** Another CA, which signed nothing the servers use. */
  readonly otherCaPem: string
  remove(): void
}

const openssl = (dir: string, args: ReadonlyArray<string>) =>
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] })

const ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]

const makeCa = (dir: string, name: string, commonName: string) =>
  openssl(dir, [
    "req",
    "-x509",
    ...ecKey,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.pem`,
    "-days",
    "1",
    "-subj",
    `/CN=${commonName}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign"
  ])

const makeServerCertificate = (dir: string, name: string, subjectAltName: string) => {
  openssl(dir, ["req", ...ecKey, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", "/CN=ldap test server"])
  writeFileSync(
    join(dir, `${name}.ext`),
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${subjectAltName}\n`
  )
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${name}.pem`,
    "-days",
    "1",
    "-extfile",
    `${name}.ext`
  ])
}

export const makeLdapCertificates = (): LdapCertificates => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-ldap-certs-"))
  makeCa(dir, "ca", "gateway LDAP test CA")
  makeCa(dir, "other-ca", "some other CA")
  makeServerCertificate(dir, "server", "IP:127.0.0.1,DNS:localhost")
  makeServerCertificate(dir, "localhost", "DNS:localhost")
  return {
    dir,
    caPem: readFileSync(join(dir, "ca.pem"), "utf8"),
    otherCaPem: readFileSync(join(dir, "other-ca.pem"), "utf8"),
    remove: () => rmSync(dir, { recursive: true, force: true })
  }
}

export type ServerTls = "verified" | "localhost-only" | "none"

export interface Slapd {
  /** `ldap://127.0.0.1:<port>` */
  readonly ldapUrl: string
  /** `ldaps://127.0.0.1:<port>`; undefined for a server without TLS. */
  readonly ldapsUrl: string | undefined
  /** Searches as the directory's administrator (to learn the entryUUIDs slapadd gave). */
  search(base: string, filter: string, attributes: Array<string>): Promise<ReadonlyArray<Entry>>
  stop(): Promise<void>
}

const accepting = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

const chownTree = (path: string, uid: number, gid: number) => {
  chownSync(path, uid, gid)
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name)
    if (entry.isDirectory()) chownTree(child, uid, gid)
    else chownSync(child, uid, gid)
  }
}

/** slapd refuses nothing as root, but Debian's runs as `openldap`; so do we when the tests run as root. */
const openldapUser = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  try {
    const uid = Number(execFileSync("id", ["-u", "openldap"], { encoding: "utf8" }).trim())
    const gid = Number(execFileSync("id", ["-g", "openldap"], { encoding: "utf8" }).trim())
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined
  } catch {
    return undefined
  }
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once("exit", () => resolve())
  })

export const startSlapd = async (certificates: LdapCertificates, tls: ServerTls): Promise<Slapd> => {
  requireSlapd()
  const dir = mkdtempSync(join(tmpdir(), "gateway-slapd-"))
  mkdirSync(join(dir, "data"))
  const certificate = tls === "localhost-only" ? "localhost" : "server"
  if (tls !== "none") {
    copyFileSync(join(certificates.dir, "ca.pem"), join(dir, "ca.pem"))
    copyFileSync(join(certificates.dir, `${certificate}.pem`), join(dir, "server.pem"))
    copyFileSync(join(certificates.dir, `${certificate}.key`), join(dir, "server.key"))
  }
  const config = [
    ...["core", "cosine", "inetorgperson", "nis"].map((schema) => `include /etc/ldap/schema/${schema}.schema`),
    "modulepath /usr/lib/ldap",
    "moduleload back_mdb",
    `pidfile ${join(dir, "slapd.pid")}`,
    "allow bind_anon_dn bind_anon_cred",
    ...(tls === "none"
      ? []
      : [
          "security tls=1",
          `TLSCACertificateFile ${join(dir, "ca.pem")}`,
          `TLSCertificateFile ${join(dir, "server.pem")}`,
          `TLSCertificateKeyFile ${join(dir, "server.key")}`
        ]),
    "database mdb",
    `suffix "${BASE_DN}"`,
    `rootdn "${ROOT_DN}"`,
    `rootpw ${ROOT_PASSWORD}`,
    `directory ${join(dir, "data")}`,
    "access to attrs=userPassword by anonymous auth by * none",
    "access to * by users read by * none",
    ""
  ].join("\n")
  writeFileSync(join(dir, "slapd.conf"), config)
  writeFileSync(join(dir, "seed.ldif"), seedLdif())
  execFileSync(SLAPADD_PATH, ["-q", "-f", join(dir, "slapd.conf"), "-l", join(dir, "seed.ldif")], {
    stdio: ["ignore", "ignore", "pipe"]
  })
  const user = openldapUser()
  if (user !== undefined) chownTree(dir, user.uid, user.gid)

  const ldapPort = await freePort()
  const ldapsPort = tls === "none" ? undefined : await freePort()
  const ldapUrl = `ldap://127.0.0.1:${ldapPort}`
  const ldapsUrl = ldapsPort === undefined ? undefined : `ldaps://127.0.0.1:${ldapsPort}`
  const child = spawn(
    SLAPD_PATH,
    [
      "-h",
      [ldapUrl, ldapsUrl].filter((url) => url !== undefined).join(" "),
      "-f",
      join(dir, "slapd.conf"),
      ...(user === undefined ? [] : ["-u", "openldap", "-g", "openldap"]),
      "-d",
      "0"
    ],
    { stdio: ["ignore", "ignore", "pipe"] }
  )
  let output = ""
  child.stderr?.on("data", (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-4000)
  })
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      const killer = setTimeout(() => child.kill("SIGKILL"), 5000)
      await exited(child)
      clearTimeout(killer)
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const deadline = Date.now() + 10_000
  for (;;) {
    if (child.exitCode !== null) {
      await stop()
      throw new Error(`slapd exited with ${child.exitCode}: ${output}`)
    }
    if ((await accepting(ldapPort)) && (ldapsPort === undefined || (await accepting(ldapsPort)))) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`slapd did not listen within 10 s: ${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }

  const search = async (base: string, filter: string, attributes: Array<string>) => {
    const client =
      ldapsUrl === undefined
        ? new Client({ url: ldapUrl })
        : new Client({ url: ldapsUrl, tlsOptions: { ca: certificates.caPem, servername: "localhost" } })
    try {
      await client.bind(ROOT_DN, ROOT_PASSWORD)
      return (await client.search(base, { scope: "sub", filter, attributes })).searchEntries
    } finally {
      await client.unbind()
    }
  }
  return { ldapUrl, ldapsUrl, search, stop }
}

/** Settings for the seeded directory at `url`: people by uid, groups by `member={{dn}}`, ids from entryUUID. */
export const directorySettings = (url: string, caPem: string | undefined): LdapSettings => ({
  url,
  bind_dn: SERVICE_DN,
  bind_password: Redacted.make(SERVICE_PASSWORD),
  user_search_base: PEOPLE_DN,
  user_search_filter: "(&(objectClass=inetOrgPerson)(uid={{username}}))",
  user_id_attribute: "entryUUID",
  user_name_attribute: "displayName",
  group_search_base: GROUPS_DN,
  group_search_filter: "(&(objectClass=groupOfNames)(member={{dn}}))",
  group_id_attribute: "entryUUID",
  group_name_attribute: "cn",
  ...(caPem === undefined ? {} : { ca_pem: caPem })
})

/** The same settings without a group search. */
export const withoutGroups = ({
  group_search_base: _base,
  group_search_filter: _filter,
  group_id_attribute: _id,
  group_name_attribute: _name,
  ...settings
}: LdapSettings): LdapSettings => settings
