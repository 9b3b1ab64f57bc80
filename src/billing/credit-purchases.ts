/**
 * How this service marks what it buys credits with at the provider (spec §16.3, §16.4): the metadata it writes on a
 * pack checkout session (and its invoice) and on an automatic top-up's invoice, and reads back from their events.
 * Written here once, for both directions.
 */

/** `metadata.purpose` of a pack checkout session and of its invoice. */
export const PACK_PURPOSE = 'credit_pack';
/** `metadata.purpose` of an automatic top-up's invoice. */
export const RECHARGE_PURPOSE = 'auto_recharge';

export function packCheckoutMetadata(p: { organisationId: string; pack: string; quantity: number }): Record<string, string> {
  return { organisation_id: p.organisationId, pack: p.pack, quantity: String(p.quantity), purpose: PACK_PURPOSE };
}

export function rechargeInvoiceMetadata(r: { organisationId: string; pack: string; rechargeId: string }): Record<string, string> {
  return { organisation_id: r.organisationId, pack: r.pack, purpose: RECHARGE_PURPOSE, recharge_id: r.rechargeId };
}

/** The pack and quantity a pack checkout's metadata says it sold; undefined for any other session or invoice. */
export function packPurchaseOf(metadata: Record<string, string> | null | undefined): { pack: string; quantity: number } | undefined {
  if (metadata?.purpose !== PACK_PURPOSE || typeof metadata.pack !== 'string' || !metadata.pack) return undefined;
  const quantity = /^[1-9]\d{0,2}$/.test(metadata.quantity ?? '') ? Number(metadata.quantity) : undefined;
  return quantity === undefined ? undefined : { pack: metadata.pack, quantity };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The recharge and pack an automatic top-up's invoice metadata names; undefined for any other invoice. */
export function rechargePurchaseOf(metadata: Record<string, string> | null | undefined): { rechargeId: string; pack: string } | undefined {
  if (metadata?.purpose !== RECHARGE_PURPOSE || typeof metadata.pack !== 'string' || !metadata.pack) return undefined;
  return typeof metadata.recharge_id === 'string' && UUID.test(metadata.recharge_id) ? { rechargeId: metadata.recharge_id, pack: metadata.pack } : undefined;
}
