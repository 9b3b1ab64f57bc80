import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'isPublic';

/** Opts a route (or controller) out of the session guard that protects every route by default. */
export const Public = () => SetMetadata(IS_PUBLIC, true);
