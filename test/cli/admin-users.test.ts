/**
 * `gateway admin users …` (docs/management-api.md, "The `gateway admin` commands"; docs/local-accounts.md):
 * the built executable against a spawned gateway, with a script's token: create prints the account and
 * its enrolment link once, the person enrols through it, and list, show, disable, enable and the
 * resets answer JSON with the exit codes scripts test.
 */
import { afterAll, describe, expect, it } from "vitest"
import { adminCliGateway } from "../support/admin-cli.js"
import { enrolThroughLink } from "../support/enrolment.js"

const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
})

describe("gateway admin users", () => {
  it("creates an account with its link, lists, shows, disables, enables and resets it, with JSON out and exit codes", async () => {
    const { gateway, run } = await adminCliGateway()
    cleanup.push(() => gateway.stop())
    const admin = (args: ReadonlyArray<string>) => run(["admin", "users", ...args])

    const created = await admin(["create", "ivy", "--display-name", "Ivy Green"])
    expect(created.code, created.stderr).toBe(0)
    const answer = JSON.parse(created.stdout)
    expect(answer.account).toMatchObject({
      username: "ivy",
      display_name: "Ivy Green",
      status: "waiting_for_enrolment"
    })
    expect(answer.enrolment_url).toMatch(new RegExp(`^${gateway.baseUrl}/sso/enrol\\?token=`))
    const id = answer.account.id as string

    const taken = await admin(["create", "IVY", "--display-name", "Other"])
    expect([taken.code, JSON.parse(taken.stdout).error]).toEqual([5, "name_taken"])
    const hostile = await admin(["create", "i\u200bvy", "--display-name", "Other"])
    expect([hostile.code, JSON.parse(hostile.stdout).error]).toEqual([6, "invalid_request"])

    const enrolled = await enrolThroughLink(answer.enrolment_url, "a long enough password", Date.now())
    expect(enrolled.status).toBe(200)

    const listed = await admin(["list", "--limit", "10"])
    expect(JSON.parse(listed.stdout).accounts).toEqual([expect.objectContaining({ id, status: "enabled" })])
    const shown = await admin(["show", id])
    expect(JSON.parse(shown.stdout)).toMatchObject({ id, revision: "2" })
    expect((await admin(["show", "not-an-id"])).code).toBe(2)
    expect((await admin(["show", "00000000-0000-4000-8000-000000000000"])).code).toBe(4)

    const stale = await admin(["disable", id, "--if-match", "1"])
    expect([stale.code, JSON.parse(stale.stdout).error]).toEqual([5, "precondition_failed"])
    const disabled = await admin(["disable", id, "--if-match", "2"])
    expect([disabled.code, JSON.parse(disabled.stdout).status]).toEqual([0, "disabled"])
    const enabled = await admin(["enable", id, "--if-match", "3"])
    expect([enabled.code, JSON.parse(enabled.stdout).status]).toEqual([0, "enabled"])
    const reset = await admin(["reset-password", id, "--if-match", "4"])
    expect(reset.code).toBe(0)
    expect(JSON.parse(reset.stdout)).toMatchObject({ account: { status: "waiting_for_enrolment" } })
    expect(JSON.parse(reset.stdout).enrolment_url).not.toBe(answer.enrolment_url)
    const resetMfa = await admin(["reset-mfa", id, "--if-match", "5"])
    expect(resetMfa.code).toBe(0)
    // The reset-password link was superseded by the reset-mfa one.
    expect(
      (await enrolThroughLink(JSON.parse(reset.stdout).enrolment_url, "x".repeat(12), Date.now())).formStatus
    ).toBe(410)
    // Thirteen `gateway` processes one after the other (~1 s each) and two scrypt enrolments: ~20 s alone.
  }, 90_000)
})
