import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppConfig } from './app-config';

/**
 * A start-up step of `npm start` and the CLI, not of loading the configuration: outside production, with no
 * PAYPROVIDER_WEBHOOK_SECRET, this machine gets one random secret, kept in DATA_DIR/webhook-secret so that it
 * survives restarts and the server and the CLI (`webhook:trigger`) sign with the same one. `created` is true
 * only on the start that generated it, which shows it once. (Production has one: EnvDto requires it.)
 */
export function withMachineWebhookSecret(config: AppConfig): { config: AppConfig; created: boolean } {
  if (config.webhookSecrets.length) return { config, created: false };
  const file = join(config.dataDir, 'webhook-secret');
  const created = !existsSync(file);
  if (created) {
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(file, `whsec_${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  }
  const secret = readFileSync(file, 'utf8').trim();
  return { config: Object.assign(new AppConfig(), config, { webhookSecrets: [secret], webhookSecretGenerated: true }), created };
}
