import { isUUID } from 'class-validator';
import { MeterReport } from '../billing/meters/meter-report';
import { CliCommand, CliUsageError, optionalFlag } from './cli-command';

/** usage:meters: per organisation and metered metric, the usage accepted against what the provider has (spec §13). */
export const meterCommands: Record<string, CliCommand> = {
  'usage:meters': {
    usage: 'usage:meters [--org ID]',
    async run(app, flags) {
      const org = optionalFlag(flags, 'org');
      if (org !== undefined && !isUUID(org)) throw new CliUsageError('--org must be an organisation id (a UUID)');
      return { data: await app!.get(MeterReport).lines(org) };
    },
  },
};
