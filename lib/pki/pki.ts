/**
 * pki/pki: the cluster's certificates (the API server's and the kubelets' serving ones), made with
 * node:crypto alone. Node can make and use keys but not certificates, so
 * this module writes the X.509 DER itself (RFC 5280): a self-signed CA, and
 * a serving certificate signed by it whose subjectAltNames are the names
 * and addresses clients dial. Keys are ECDSA P-256, signatures
 * ecdsa-with-SHA256, which Go's crypto/x509 (kubectl, client-go) and
 * OpenSSL (Node's TLS) both accept.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';

// --- DER ---------------------------------------------------------------------------------------------------

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, body: Buffer): Buffer => tlv(0xa0 | n, body);
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bitString = (b: Buffer, unused = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unused]), b]));
const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));

/** A non-negative INTEGER from big-endian bytes. */
function integer(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  const v = b.subarray(i);
  return tlv(0x02, v[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out = [40 * parts[0]! + parts[1]!];
  for (const p of parts.slice(2)) {
    const enc: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) enc.unshift(0x80 | (v & 0x7f));
    out.push(...enc);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime before 2050, GeneralizedTime after, as RFC 5280 requires. */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

const OID = {
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyId: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyId: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

function name(cn: string, o?: string | readonly string[]): Buffer {
  const os = typeof o === 'string' ? [o] : o ?? [];
  // One RDN per organization, before the CN (kube-apiserver reads every O of a client certificate as a group).
  return seq(...os.map((x) => set(seq(oid(OID.organization), utf8(x)))), set(seq(oid(OID.commonName), utf8(cn))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), bool(true), octets(value)) : seq(oid(id), octets(value));
}

/** keyUsage bits, as RFC 5280 numbers them. */
const KU = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;
function keyUsage(bits: readonly number[]): Buffer {
  let v = 0;
  for (const b of bits) v |= 0x80 >> b; // all bits used here are < 8
  let unused = 0;
  while (unused < 7 && !(v & (1 << unused))) unused++;
  return bitString(Buffer.from([v]), unused);
}

/** The key identifier of RFC 5280 4.2.1.2, method 1: SHA-1 of the subjectPublicKey bits. */
function keyId(spki: Buffer): Buffer {
  // The subjectPublicKey BIT STRING ends the SubjectPublicKeyInfo; for P-256 it holds the 65-byte point.
  return createHash('sha1').update(spki.subarray(spki.length - 65)).digest();
}

// --- certificates ------------------------------------------------------------------------------------------

export interface Issued {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface CertSpec {
  readonly commonName: string;
  readonly organization?: string;
  /** Several organizations (a client certificate's groups, as kube-apiserver reads them); instead of organization. */
  readonly organizations?: readonly string[];
  /** DNS names and IP addresses (serving certificates). */
  readonly hosts?: readonly string[];
  readonly isCA?: boolean;
  /** Days valid from now (default 3650). */
  readonly days?: number;
  /** What may sign it (omit for a self-signed CA). */
  readonly issuer?: { readonly certPem: string; readonly keyPem: string; readonly commonName: string; readonly organization?: string };
}

function pem(label: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/** Makes a key pair and a certificate for it. */
export function issue(spec: CertSpec): Issued {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const signer: KeyObject = spec.issuer ? createPrivateKey(spec.issuer.keyPem) : privateKey;
  const issuerSpki = spec.issuer ? createPublicKey(spec.issuer.certPem).export({ type: 'spki', format: 'der' }) : spki;
  const now = Date.now();
  const notBefore = new Date(now - 60 * 60_000); // an hour of clock skew
  const notAfter = new Date(now + (spec.days ?? 3650) * 86_400_000);
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;

  const exts: Buffer[] = [];
  if (spec.isCA) {
    exts.push(extension(OID.basicConstraints, true, seq(bool(true))));
    exts.push(extension(OID.keyUsage, true, keyUsage([KU.digitalSignature, KU.keyCertSign, KU.cRLSign])));
  } else {
    exts.push(extension(OID.basicConstraints, true, seq()));
    exts.push(extension(OID.keyUsage, true, keyUsage([KU.digitalSignature, KU.keyEncipherment])));
    exts.push(extension(OID.extKeyUsage, false, seq(oid(spec.hosts?.length ? OID.serverAuth : OID.clientAuth))));
  }
  if (spec.hosts?.length) {
    const names = spec.hosts.map((h) => {
      const v = isIP(h);
      if (v === 4) return tlv(0x87, Buffer.from(h.split('.').map(Number)));
      if (v === 6) throw new TypeError(`issue: IPv6 SANs are not supported: ${h}`);
      return tlv(0x82, Buffer.from(h, 'ascii'));
    });
    exts.push(extension(OID.subjectAltName, false, seq(...names)));
  }
  exts.push(extension(OID.subjectKeyId, false, octets(keyId(spki))));
  exts.push(extension(OID.authorityKeyId, false, seq(tlv(0x80, keyId(issuerSpki)))));

  const alg = seq(oid(OID.ecdsaWithSHA256));
  const issuerName = spec.issuer ? name(spec.issuer.commonName, spec.issuer.organization) : name(spec.commonName, spec.organizations ?? spec.organization);
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    alg,
    issuerName,
    seq(time(notBefore), time(notAfter)),
    name(spec.commonName, spec.organizations ?? spec.organization),
    spki,
    explicit(3, seq(...exts)),
  );
  const sig = sign('sha256', tbs, signer);
  const cert = seq(tbs, alg, bitString(sig));
  return { certPem: pem('CERTIFICATE', cert), keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
