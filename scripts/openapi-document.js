// Writes the service's OpenAPI document (the one /api/docs-json serves) to a file, from the built code, with
// no database: Nest's preview mode reads the controllers' decorators without creating any provider. The
// client package's types are generated from that file (npm run client:generate).
//   node scripts/openapi-document.js packages/client/openapi.json
require('reflect-metadata');
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { NestFactory } = require('@nestjs/core');

const dist = join(__dirname, '..', 'dist', 'src');
const { AppModule } = require(join(dist, 'app.module'));
const { AppConfig, loadConfig } = require(join(dist, 'config', 'app-config'));
const { buildOpenApiDocument } = require(join(dist, 'ops', 'openapi'));

async function main(out) {
  // The defaults of a laptop: the document depends on the code and, for its tier names, on the tier table
  // (the default one, or TIERS_FILE's when set: a team with its own table generates its client with it).
  const config = Object.assign(new AppConfig(), loadConfig({ DATABASE_URL: 'postgres://unused@127.0.0.1:1/unused', PAYPROVIDER_WEBHOOK_SECRET: 'unused', TIERS_FILE: process.env.TIERS_FILE }));
  const app = await NestFactory.create(AppModule.forRoot(config), { preview: true, logger: false });
  const document = buildOpenApiDocument(app, config.tiers);
  await app.close();
  writeFileSync(out, `${JSON.stringify(document, null, 2)}\n`);
}

main(process.argv[2] ?? 'openapi.json').catch((err) => {
  console.error(err);
  process.exit(1);
});
