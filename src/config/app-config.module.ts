import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';

/** Makes the validated AppConfig injectable everywhere: the one way the code reads its configuration. */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    // Without a secret every webhook would be refused: the start-up must have given this machine its own.
    if (!config.webhookSecrets.length) throw new Error('no webhook secret: the start-up calls withMachineWebhookSecret first');
    return {
      module: AppConfigModule,
      providers: [{ provide: AppConfig, useValue: config }],
      exports: [AppConfig],
    };
  }
}
