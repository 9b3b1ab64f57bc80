import { AppConfig } from '../config/app-config';
import { IdentityService, UUID } from '../identity/identity.service';
import { ROLES, Role } from '../identity/membership.entity';
import { ProvisioningService } from '../identity/provisioning.service';
import { cliActor, CliCommand, CliUsageError, integerFlag, oneOfFlag, requireFlag } from './cli-command';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function uuidFlag(flags: Parameters<typeof requireFlag>[0], name: string): string {
  const value = requireFlag(flags, name);
  if (!UUID.test(value)) throw new CliUsageError(`--${name} must be a UUID`);
  return value;
}

export const identityCommands: Record<string, CliCommand> = {
  'org:create': {
    usage: 'org:create --name NAME',
    async run(app, flags) {
      const name = requireFlag(flags, 'name').trim();
      if (!name || name.length > 200) throw new CliUsageError('--name must be 1 to 200 characters');
      const { record } = await app!.get(ProvisioningService).createOrganisation(cliActor(), name);
      return { id: record.id, name: record.name };
    },
  },
  'user:create': {
    usage: 'user:create --email EMAIL',
    async run(app, flags) {
      const email = requireFlag(flags, 'email').trim();
      if (!EMAIL.test(email) || email.length > 320) throw new CliUsageError('--email must be an email address');
      const { record } = await app!.get(ProvisioningService).createUser(cliActor(), email);
      return { id: record.id, email: record.email };
    },
  },
  'member:add': {
    usage: 'member:add --org ID --user ID [--role owner|admin|member]',
    async run(app, flags) {
      const role = oneOfFlag<Role>(flags, 'role', ROLES) ?? 'member';
      // A new member beyond the users limit in force is refused (402) by the one method that adds members.
      return app!.get(ProvisioningService).putMember(cliActor(), uuidFlag(flags, 'org'), uuidFlag(flags, 'user'), role);
    },
  },
  'session:create': {
    usage: 'session:create --user ID [--ttl SECONDS]',
    async run(app, flags) {
      const userId = uuidFlag(flags, 'user');
      const ttl =
        integerFlag(flags, 'ttl', { min: 1, max: 999_999_999 }, '--ttl must be a positive whole number of seconds') ??
        app!.get(AppConfig).sessionTtlS;
      if (!(await app!.get(IdentityService).userExists(userId))) throw new CliUsageError(`no user with id ${userId}`);
      const session = await app!.get(ProvisioningService).createSession(cliActor(), userId, ttl);
      return { token: session.token, expires_at: session.expiresAt.toISOString() };
    },
  },
  'session:revoke': {
    usage: 'session:revoke --token TOKEN',
    async run(app, flags) {
      const revoked = await app!.get(ProvisioningService).revokeSession(cliActor(), requireFlag(flags, 'token'));
      if (!revoked) throw new CliUsageError('no live session with that token');
      return { revoked: true };
    },
  },
};
