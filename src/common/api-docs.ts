import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse } from '@nestjs/swagger';
import { ERROR_CODES } from './error-codes';

const CODE_LIST = Object.entries(ERROR_CODES)
  .map(([code, [status, meaning]]) => `- \`${code}\` (${status}): ${meaning}`)
  .join('\n');

/** The shared error body, as documented in OpenAPI, with every code the API can answer. */
export class ErrorResponse {
  @ApiProperty({ example: 400 }) statusCode: number;
  @ApiProperty({ example: 'Bad Request' }) error: string;
  @ApiProperty({ example: 'organisation_id must be a UUID' }) message: string;
  @ApiProperty({
    example: 'validation_failed',
    enum: Object.keys(ERROR_CODES),
    description: `Stable machine code; switch on it, not on the message. Every code, with its HTTP status:\n${CODE_LIST}`,
  })
  code: string;
}

/** Documents error statuses of a route, each with the shared error body: `@ApiErrors(400, 401, 403)`. */
export const ApiErrors = (...statuses: number[]) =>
  applyDecorators(...statuses.map((status) => ApiResponse({ status, type: ErrorResponse })));

/**
 * Names of the security schemes registered in the OpenAPI document (src/ops/openapi.ts). Routes refer to them
 * through the vocabulary in route-auth.decorators.ts, not directly.
 */
export const SECURITY = {
  session: 'session',
  sessionCookie: 'session_cookie',
  serviceKey: 'service_key',
  metricsToken: 'metrics_token',
} as const;
