import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** One public key of the JWKS: Ed25519 (`OKP`, EdDSA) or P-256 (`EC`, ES256). */
export class PublicJwk {
  @ApiProperty({ enum: ['OKP', 'EC'] }) kty: string;
  @ApiProperty({ enum: ['Ed25519', 'P-256'] }) crv: string;
  @ApiProperty({ description: 'Public key (base64url)' }) x: string;
  @ApiPropertyOptional({ description: 'Public key, second coordinate (EC only)' }) y?: string;
  @ApiProperty({ description: "The key id: a token's header `kid` names it" }) kid: string;
  @ApiProperty({ enum: ['EdDSA', 'ES256'] }) alg: string;
  @ApiProperty({ enum: ['sig'] }) use: string;
}

export class JsonWebKeySet {
  @ApiProperty({ type: [PublicJwk], description: 'The signing key first, then the keys being rotated out' })
  keys: PublicJwk[];
}
