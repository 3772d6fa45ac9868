/**
 * skel: the part of the CNI protocol every plugin must do itself, as a pure
 * function: `dispatch(env, stdin)` turns one invocation into a VERSION answer,
 * a call to forward to the agent, or the spec's error. No I/O happens here:
 * main.ts reads stdin and the environment and writes the outcome.
 *
 * Semantics follow CNI SPEC 1.1 and containernetworking/cni pkg/skel:
 * - required variables: CNI_COMMAND always; CNI_CONTAINERID, CNI_IFNAME and
 *   CNI_PATH for ADD/CHECK/DEL; CNI_NETNS for ADD/CHECK only; CNI_PATH alone
 *   for STATUS and GC. Missing ones are listed in one code-4 error.
 * - the container ID must match [a-zA-Z0-9][a-zA-Z0-9_.-]*, the interface name
 *   must be 1..15 bytes, not "." or "..", without '/', ':' or whitespace (4).
 * - stdin must be a JSON object (6) with a valid network `name` (7) and a
 *   supported `cniVersion` (1). CHECK needs >= 0.4.0, STATUS and GC >= 1.1.0 (1).
 * - an unknown command is code 4; VERSION ignores stdin.
 * Checks run in the order above, except that an unknown command is reported
 * before anything else (upstream would first complain about stdin).
 *
 * The shim answers these itself so that they come back the same whether or not
 * the agent is up; the plugin's own configuration fields are the agent's job.
 */

import {
  CniCode as CniErrorCode, isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS,
  type CniCallRequest, type CniCommand, type CniVersion,
} from '../../proto/cni/v1/contract.js';

export { CniErrorCode, isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS, type CniCallRequest, type CniCommand, type CniVersion };

/** The spec's error structure, as printed on stdout. */
export interface CniErrorJson {
  readonly cniVersion: string;
  readonly code: number;
  readonly msg: string;
  readonly details: string;
}

export type SkelOutcome =
  | { readonly kind: 'version'; readonly output: string }
  | {
      readonly kind: 'call';
      readonly command: CniCommand;
      readonly request: CniCallRequest;
      readonly cniVersion: CniVersion;
      readonly config: Readonly<Record<string, unknown>>;
    }
  | { readonly kind: 'error'; readonly error: CniErrorJson };

export type CniEnv = Readonly<Record<string, string | undefined>>;

const COMMANDS: readonly CniCommand[] = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC'];

/** Which variables each command requires, in the order they are reported. */
const REQUIRED: Readonly<Record<CniCommand, readonly string[]>> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_PATH'],
  STATUS: ['CNI_PATH'],
  GC: ['CNI_PATH'],
};

/** The first spec version that defines each command. */
const MIN_VERSION: Readonly<Record<CniCommand, CniVersion | undefined>> = {
  ADD: undefined,
  DEL: undefined,
  CHECK: '0.4.0',
  STATUS: '1.1.0',
  GC: '1.1.0',
};

const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
const VERSION_RE = /^(\d+)\.(\d+)\.(\d+)$/;

/** Compares two "x.y.z" versions; undefined if either is malformed. */
export function compareVersions(a: string, b: string): number | undefined {
  const ma = VERSION_RE.exec(a);
  const mb = VERSION_RE.exec(b);
  if (!ma || !mb) return undefined;
  for (let i = 1; i <= 3; i++) {
    const d = Number(ma[i]) - Number(mb[i]);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** The VERSION answer. */
export function versionInfo(): string {
  return JSON.stringify({ cniVersion: LATEST_VERSION, supportedVersions: SUPPORTED_VERSIONS });
}

/** The error JSON as printed on stdout; `details` is omitted when empty (as upstream does). */
export function formatError(e: CniErrorJson): string {
  const out: Record<string, unknown> = { cniVersion: e.cniVersion, code: e.code, msg: e.msg };
  if (e.details !== '') out['details'] = e.details;
  return JSON.stringify(out);
}

/** Interface-name rules from the spec (and the kernel's dev_valid_name). */
export function interfaceNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'interface name is empty';
  if (new TextEncoder().encode(name).length > 15) return 'interface name is longer than 15 bytes';
  if (name === '.' || name === '..') return 'interface name is . or ..';
  if (/[/:\s]/u.test(name)) return 'interface name contains / or : or whitespace';
  return undefined;
}

export function dispatch(env: CniEnv, stdin: Uint8Array | string): SkelOutcome {
  const fail = (code: number, msg: string, details = '', cniVersion: string = LATEST_VERSION): SkelOutcome => ({
    kind: 'error',
    error: { cniVersion, code, msg, details },
  });
  const get = (name: string): string => env[name] ?? '';

  const cmd = get('CNI_COMMAND');
  if (cmd === '') return fail(CniErrorCode.InvalidEnvironment, 'required env variables [CNI_COMMAND] missing');
  if (cmd === 'VERSION') return { kind: 'version', output: versionInfo() };
  if (!(COMMANDS as readonly string[]).includes(cmd)) {
    return fail(CniErrorCode.InvalidEnvironment, `unknown CNI_COMMAND: ${cmd}`);
  }
  const command = cmd as CniCommand;

  const missing = REQUIRED[command].filter((v) => get(v) === '');
  if (missing.length > 0) {
    return fail(CniErrorCode.InvalidEnvironment, `required env variables [${missing.join(',')}] missing`);
  }
  if (command === 'ADD' || command === 'CHECK' || command === 'DEL') {
    const id = get('CNI_CONTAINERID');
    if (!NAME_RE.test(id)) return fail(CniErrorCode.InvalidEnvironment, 'invalid characters in containerID', id);
    const ifProblem = interfaceNameProblem(get('CNI_IFNAME'));
    if (ifProblem !== undefined) return fail(CniErrorCode.InvalidEnvironment, ifProblem, get('CNI_IFNAME'));
  }

  const bytes = typeof stdin === 'string' ? new TextEncoder().encode(stdin) : stdin;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return fail(CniErrorCode.DecodingFailure, 'error decoding network config: stdin is not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return fail(CniErrorCode.DecodingFailure, `error decoding network config: ${(e as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return fail(CniErrorCode.DecodingFailure, 'error decoding network config: not a JSON object');
  }
  const config = parsed as Record<string, unknown>;

  // The version decides the cniVersion of every later error, so read it first,
  // but report name problems before version problems, as upstream does.
  const rawVersion = config['cniVersion'];
  if (rawVersion !== undefined && typeof rawVersion !== 'string') {
    return fail(CniErrorCode.DecodingFailure, 'error decoding network config: cniVersion is not a string');
  }
  const errVersion = rawVersion !== undefined && isSupportedVersion(rawVersion) ? rawVersion : LATEST_VERSION;

  const name = config['name'];
  if (name !== undefined && typeof name !== 'string') {
    return fail(CniErrorCode.DecodingFailure, 'error decoding network config: name is not a string', '', errVersion);
  }
  if (name === undefined || name === '') return fail(CniErrorCode.InvalidNetworkConfig, 'missing network name', '', errVersion);
  if (!NAME_RE.test(name)) {
    return fail(CniErrorCode.InvalidNetworkConfig, 'invalid characters found in network name', name, errVersion);
  }

  const supported = `plugin supports [${SUPPORTED_VERSIONS.join(', ')}]`;
  if (rawVersion === undefined || rawVersion === '') {
    return fail(CniErrorCode.IncompatibleVersion, 'incompatible CNI versions', `config has no cniVersion, ${supported}`);
  }
  const floor = MIN_VERSION[command];
  if (floor !== undefined) {
    const cmp = compareVersions(rawVersion, floor);
    if (cmp !== undefined && cmp < 0) {
      return fail(CniErrorCode.IncompatibleVersion, `config version does not allow ${command}`, `config is "${rawVersion}", ${command} needs >= ${floor}`, errVersion);
    }
  }
  if (!isSupportedVersion(rawVersion)) {
    return fail(CniErrorCode.IncompatibleVersion, 'incompatible CNI versions', `config is "${rawVersion}", ${supported}`);
  }

  return {
    kind: 'call',
    command,
    cniVersion: rawVersion,
    config,
    request: {
      containerId: get('CNI_CONTAINERID'),
      netns: get('CNI_NETNS'),
      ifName: get('CNI_IFNAME'),
      args: get('CNI_ARGS'),
      path: get('CNI_PATH'),
      config: bytes,
    },
  };
}
