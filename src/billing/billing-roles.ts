import { Role } from '../identity/membership.entity';

/** Roles that may act on money: open a checkout or the billing portal (SPEC 3). */
export const BILLING_ROLES: readonly Role[] = ['owner', 'admin'];
