/**
 * netfilter/nft-sets testdata: the batches the old element encoder of
 * nft-sets.ts (its own encodeBatch, before issue 25 part 6 moved element
 * messages onto netlink/encode.ts) wrote for these ops, captured from that
 * code at commit 72c67a8 before it was deleted. `seq` is the BATCH_BEGIN's;
 * op i has seq + 1 + i. The kernel accepted these bytes (nft-sets.priv.test.ts
 * ran against them), so the unified path must send exactly them.
 */
import type { NftElementOp } from './nft-sets.js';

export interface ElementBatchGolden {
  readonly name: string;
  readonly seq: number;
  readonly ops: readonly NftElementOp[];
  /** BATCH_BEGIN, one message per op, BATCH_END, in hex. */
  readonly hex: string;
}

export const ELEMENT_BATCH_GOLDEN: readonly ElementBatchGolden[] = [
  {
    name: 'masquerade ADD: a pod and its pod . subnet pair',
    seq: 100,
    ops: [
      { op: 'add', family: 'ip', table: 'nodenet-cni', set: 'masq-pods', interval: false, elements: ['10.244.1.5'] },
      { op: 'add', family: 'ip', table: 'nodenet-cni', set: 'masq-exempt', interval: true, elements: ['10.244.1.5 . 10.244.1.0/24'] },
    ],
    hex:
      '140000001000010064000000000000000000000a480000000c0a0504650000000000000002000000100001006e6f6465' +
      '6e65742d636e69000e0002006d6173712d706f647300000014000380100001800c000180080001000af401055c000000' +
      '0c0a0504660000000000000002000000100001006e6f64656e65742d636e6900100002006d6173712d6578656d707400' +
      '2800038024000180100001800c0001000af401050af4010010000a800c0001000af401050af401ff1400000011000100' +
      '67000000000000000000000a',
  },
  {
    name: 'masquerade DEL: the same two elements',
    seq: 200,
    ops: [
      { op: 'delete', family: 'ip', table: 'nodenet-cni', set: 'masq-pods', interval: false, elements: ['10.244.1.5'] },
      { op: 'delete', family: 'ip', table: 'nodenet-cni', set: 'masq-exempt', interval: true, elements: ['10.244.1.5 . 10.244.1.0/24'] },
    ],
    hex:
      '1400000010000100c8000000000000000000000a480000000e0a0500c90000000000000002000000100001006e6f6465' +
      '6e65742d636e69000e0002006d6173712d706f647300000014000380100001800c000180080001000af401055c000000' +
      '0e0a0500ca0000000000000002000000100001006e6f64656e65742d636e6900100002006d6173712d6578656d707400' +
      '2800038024000180100001800c0001000af401050af4010010000a800c0001000af401050af401ff1400000011000100' +
      'cb000000000000000000000a',
  },
  {
    name: 'add: several elements in one message',
    seq: 2147483632,
    ops: [
      { op: 'add', family: 'ip', table: 'nodenet-cni', set: 'masq-pods', interval: false, elements: ['10.244.1.5', '10.244.1.6', '192.168.255.254'] },
    ],
    hex:
      '1400000010000100f0ffff7f000000000000000a680000000c0a0504f1ffff7f0000000002000000100001006e6f6465' +
      '6e65742d636e69000e0002006d6173712d706f647300000034000380100001800c000180080001000af4010510000180' +
      '0c000180080001000af40106100001800c00018008000100c0a8fffe1400000011000100f2ffff7f000000000000000a',
  },
  {
    name: 'delete: several elements, plain and interval',
    seq: 7,
    ops: [
      { op: 'delete', family: 'ip', table: 'nodenet-cni', set: 'masq-pods', interval: false, elements: ['10.0.0.1', '10.0.0.2'] },
      { op: 'delete', family: 'ip', table: 'nodenet-cni', set: 'masq-exempt', interval: true, elements: ['10.0.0.1 . 10.0.0.0/16', '10.0.0.2 . 10.0.0.2'] },
    ],
    hex:
      '140000001000010007000000000000000000000a580000000e0a0500080000000000000002000000100001006e6f6465' +
      '6e65742d636e69000e0002006d6173712d706f647300000024000380100001800c000180080001000a00000110000180' +
      '0c000180080001000a000002800000000e0a0500090000000000000002000000100001006e6f64656e65742d636e6900' +
      '100002006d6173712d6578656d7074004c00038024000180100001800c0001000a0000010a00000010000a800c000100' +
      '0a0000010a00ffff24000180100001800c0001000a0000020a00000210000a800c0001000a0000020a00000214000000' +
      '110001000a000000000000000000000a',
  },
  {
    name: 'add: a single address in an interval set, short names',
    seq: 1,
    ops: [
      { op: 'add', family: 'ip', table: 't', set: 'ex', interval: true, elements: ['10.244.1.5'] },
    ],
    hex:
      '140000001000010001000000000000000000000a440000000c0a05040200000000000000020000000600010074000000' +
      '0700020065780000200003801c0001800c000180080001000af401050c000a80080001000af401051400000011000100' +
      '03000000000000000000000a',
  },
  {
    name: 'add and delete in one batch',
    seq: 4242,
    ops: [
      { op: 'add', family: 'ip', table: 'tab', set: 'set1', interval: false, elements: ['1.2.3.4'] },
      { op: 'delete', family: 'ip', table: 'tab', set: 'set1', interval: false, elements: ['5.6.7.8'] },
    ],
    hex:
      '140000001000010092100000000000000000000a3c0000000c0a05049310000000000000020000000800010074616200' +
      '09000200736574310000000014000380100001800c00018008000100010203043c0000000e0a05009410000000000000' +
      '02000000080001007461620009000200736574310000000014000380100001800c000180080001000506070814000000' +
      '1100010095100000000000000000000a',
  },
];

const BIG_IPS = Array.from({ length: 250 }, (_, i) => `10.244.${i >> 6}.${(i & 63) * 4 + 2}`);

/**
 * A reconcile-sized batch: 250 pods added to both sets, one op per set
 * (13,152 bytes; each message is past the 4,096 bytes of any proxy message).
 * Too long for hex here: the old encoder's bytes as their length and sha256,
 * computed with encodeBatch of nft-sets.ts at commit 72c67a8.
 */
export const BIG_ELEMENT_BATCH: Omit<ElementBatchGolden, 'hex'> & { readonly length: number; readonly sha256: string } = {
  name: 'reconcile: 250 pods in both sets',
  seq: 31337,
  ops: [
    { op: 'add', family: 'ip', table: 'nodenet-cni', set: 'masq-pods', interval: false, elements: BIG_IPS },
    { op: 'add', family: 'ip', table: 'nodenet-cni', set: 'masq-exempt', interval: true, elements: BIG_IPS.map((ip) => `${ip} . ${ip.split('.').slice(0, 3).join('.')}.0/24`) },
  ],
  length: 13152,
  sha256: 'bf590eea60ce9088fb906b759cb04c7d9ea20025c1b0db2a78afa2536ad8be32',
};
