/**
 * test-vm/suite: what a VM suite is. One file per suite in test-vm/suites/,
 * exporting `suite` (or `suites`, for one body run in several modes): the
 * runner on the host reads `vms` and the timeouts, and every VM of the run
 * calls `run` with its own context inside the guest. Whatever `run`
 * returns (a line of details) is a pass; a throw is a fail with its message.
 * The guest prints the result line; the run passes when every VM passed.
 */
export interface GuestContext {
  readonly suite: string;
  /** This VM's number, 1-based; VM1 usually drives the suite. */
  readonly vm: number;
  /** How many VMs the run has. */
  readonly vms: number;
  /** VM n's underlay address, without the prefix. */
  ip(n: number): string;
  /** The run's shared directory (read-write in every VM): hand files between VMs here. */
  readonly share: string;
  /** The repository (read-only) and its dist/ (the run's snapshot). */
  readonly repo: string;
  readonly dist: string;
  /** The run's `--param key=value` pairs (nodenet.param.key=value on the kernel command line). */
  readonly params: ReadonlyMap<string, string>;
  /** A progress line on the serial console (kept and printed when the run fails). */
  log(msg: string): void;
}

export interface VmSuite {
  readonly name: string;
  /** 2 (a direct cable) or 3 (the runner's switch). */
  readonly vms: number;
  /** Seconds each qemu may run, per accelerator; the runner kills it then. */
  readonly timeoutSec: { readonly kvm: number; readonly tcg: number };
  /**
   * Not in the default set (`npm run test:vm`, CI): run by `--all` or by name. For what the default set or
   * `npm test` already covers, whose minutes under TCG CI's budget cannot spare.
   */
  readonly extra?: true;
  /**
   * The suite runs the real kubectl (the demo does): the runner puts the host's kubectl (a static Go binary,
   * the build matching nodenet's API version when the host has a version dispatcher) at dist/vm/bin/kubectl.
   */
  readonly needsKubectl?: true;
  /**
   * 'systemd': the VMs boot systemd as PID 1 (nodenet.init=systemd; it starts the suite as nodenet-vm.service),
   * for a suite that runs what a real node runs under systemd: provision/nodenet.sh's units. Otherwise the image's
   * own small init is PID 1, seconds faster to boot under TCG.
   */
  readonly init?: 'systemd';
  /** Memory per VM (default 1024). */
  readonly memoryMiB?: number;
  run(ctx: GuestContext): Promise<string>;
}

/** The suites a suite module exports. */
export function suitesOf(mod: { suite?: VmSuite; suites?: readonly VmSuite[] }): VmSuite[] {
  return [...(mod.suite ? [mod.suite] : []), ...(mod.suites ?? [])];
}
