import { timingSafeEqual } from 'node:crypto';
import { computeSignature, PROVIDER_SIGNATURE_HEADER, SIGNATURE_HEADER } from '../provider/provider-signature';
import { AppException } from '../common/app-exception';
import { ErrorCode } from '../common/error-codes';

// One entry of the header: a lower-case scheme name, '=', a value without separators or whitespace.
const ENTRY = /^([a-z0-9]+)=([^\s,=]+)$/;
const TIMESTAMP = /^\d{1,12}$/;

export interface ParsedSignatureHeader {
  timestamp: number;
  signatures: string[];
}

const reject = (code: ErrorCode, message: string) => new AppException(code, message);

/**
 * Parses `t=<ts>,v1=<hex>[,v1=…][,v0=…]`. Strict, like the provider's SDK: whitespace, a repeated `t`
 * or an entry that is not `key=value` makes the whole header malformed. Schemes other than v1 are ignored.
 */
export function parseSignatureHeader(header: string | string[] | undefined): ParsedSignatureHeader {
  if (header === undefined || header === '') {
    throw reject('signature_missing', `The ${SIGNATURE_HEADER} (or ${PROVIDER_SIGNATURE_HEADER}) header is required.`);
  }
  if (Array.isArray(header)) throw reject('signature_malformed', 'Send one signature header.');
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const entry of header.split(',')) {
    const match = ENTRY.exec(entry);
    if (!match) throw reject('signature_malformed', 'The signature header is malformed.');
    const [, key, value] = match;
    if (key === 't') {
      if (timestamp !== undefined || !TIMESTAMP.test(value)) {
        throw reject('signature_malformed', 'The signature header needs exactly one numeric t=.');
      }
      timestamp = Number(value);
    } else if (key === 'v1') {
      signatures.push(value);
    }
  }
  if (timestamp === undefined) throw reject('signature_malformed', 'The signature header has no t=.');
  if (!signatures.length) throw reject('signature_malformed', 'The signature header has no v1= signature.');
  return { timestamp, signatures };
}

/**
 * Throws a 400 AppException unless the header carries a v1 signature of the raw body by one of the
 * secrets (several during a rotation), with a timestamp within `toleranceS` of now in either direction.
 */
export function verifySignature(opts: {
  rawBody: Buffer;
  header: string | string[] | undefined;
  secrets: readonly string[];
  toleranceS: number;
  nowS?: number;
}): void {
  const { timestamp, signatures } = parseSignatureHeader(opts.header);
  const now = opts.nowS ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > opts.toleranceS) {
    throw reject('signature_timestamp_out_of_tolerance', 'The signature timestamp is too far from the current time.');
  }
  const given = signatures.map((s) => Buffer.from(s, 'utf8'));
  for (const secret of opts.secrets) {
    const expected = Buffer.from(computeSignature(timestamp, opts.rawBody, secret), 'utf8');
    // timingSafeEqual needs equal lengths; a length mismatch is simply not a match.
    if (given.some((g) => g.length === expected.length && timingSafeEqual(g, expected))) return;
  }
  throw reject('signature_invalid', 'No signature matches the payload.');
}
