// Types of scripts/test-prerequisites.mjs, for the tests that share its checks and paths.
export declare const CHROMIUM_PATH: string
export declare const CHROMIUM_INSTALL: string
export declare const SLAPD_PATH: string
export declare const SLAPADD_PATH: string
export declare const SLAPD_INSTALL: string
export declare const PROMTOOL_PATH: string
export declare const PROMTOOL_INSTALL: string
export declare const postgresTestUrl: string
export declare const missingChromium: (path?: string) => string | undefined
export declare const missingSlapd: (paths?: ReadonlyArray<string>) => string | undefined
export declare const missingPromtool: (path?: string) => string | undefined
export declare const unreachablePostgres: (url?: string, timeoutMs?: number) => Promise<string | undefined>
export declare const testPrerequisiteProblems: () => Promise<Array<string>>
