import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppException, notAMember, roleRequired } from '../common/app-exception';
import { Role } from './membership.entity';

export interface OrganisationRow {
  id: string;
  name: string;
}

@Injectable()
export class IdentityService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async createOrganisation(name: string): Promise<OrganisationRow> {
    const [row] = await this.db.query(`INSERT INTO organisations (name) VALUES ($1) RETURNING id, name`, [name]);
    return row;
  }

  async createUser(email: string): Promise<{ id: string; email: string }> {
    const [row] = await this.db.query(
      `INSERT INTO users (email) VALUES (lower($1)) ON CONFLICT (email) DO NOTHING RETURNING id, email`,
      [email],
    );
    if (!row) throw new AppException(409, 'email_taken', `A user with email ${email.toLowerCase()} already exists.`);
    return row;
  }

  /**
   * Adds (or changes the role of) a member. `manager` lets a caller run it inside its own transaction,
   * e.g. after locking the organisation to check the users limit.
   */
  async addMember(organisationId: string, userId: string, role: Role, manager: EntityManager = this.db.manager) {
    const [org] = await manager.query(`SELECT 1 FROM organisations WHERE id = $1`, [organisationId]);
    if (!org) throw new AppException(404, 'organisation_not_found', `No organisation with id ${organisationId}.`);
    const [user] = await manager.query(`SELECT 1 FROM users WHERE id = $1`, [userId]);
    if (!user) throw new AppException(404, 'user_not_found', `No user with id ${userId}.`);
    await manager.query(
      `INSERT INTO memberships (organisation_id, user_id, role) VALUES ($1, $2, $3)
       ON CONFLICT (organisation_id, user_id) DO UPDATE SET role = EXCLUDED.role`,
      [organisationId, userId, role],
    );
    return { organisation_id: organisationId, user_id: userId, role };
  }

  async userExists(userId: string): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 FROM users WHERE id = $1`, [userId]);
    return rows.length > 0;
  }

  /** The caller's role in the organisation; 403 (same body whether or not it exists) otherwise. */
  async requireMember(userId: string, organisationId: string, roles?: readonly Role[]): Promise<Role> {
    const [row] = await this.db.query(`SELECT role FROM memberships WHERE user_id = $1 AND organisation_id = $2`, [
      userId,
      organisationId,
    ]);
    if (!row) throw notAMember();
    if (roles && !roles.includes(row.role)) throw roleRequired(roles);
    return row.role;
  }

  /** The organisations the user belongs to, with their role. */
  async membershipsOf(userId: string): Promise<{ organisation_id: string; role: Role }[]> {
    return this.db.query(`SELECT organisation_id, role FROM memberships WHERE user_id = $1 ORDER BY created_at`, [userId]);
  }
}
