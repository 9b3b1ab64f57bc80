import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';

/** The console's sign-in tables (console_sign_in_links, console_sessions): the only file with SQL for them. */
@Injectable()
export class ConsoleAuthRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A new link; links and sessions long expired go first (a link table nobody cleans only grows). */
  async insertLink(tokenHash: Buffer, email: string, ttlMinutes: number): Promise<Date> {
    await this.db.query(`DELETE FROM console_sign_in_links WHERE expires_at < now() - interval '1 day'`);
    await this.db.query(`DELETE FROM console_sessions WHERE expires_at < now() - interval '1 day'`);
    const [row] = await this.db.query<{ expiresAt: Date }[]>(
      `INSERT INTO console_sign_in_links (token_hash, email, expires_at) VALUES ($1, $2, now() + make_interval(mins => $3))
       RETURNING expires_at AS "expiresAt"`,
      [tokenHash, email, ttlMinutes],
    );
    return row.expiresAt;
  }

  /**
   * Marks a live, unused link used and answers its operator, in one statement: of two concurrent redemptions
   * one wins. Undefined when the link is unknown, expired or used.
   */
  async redeemLink(m: EntityManager, tokenHash: Buffer): Promise<string | undefined> {
    // TypeORM answers an UPDATE as [rows, affected count].
    const [rows] = await m.query<[{ email: string }[], number]>(
      `UPDATE console_sign_in_links SET used_at = now()
       WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING email`,
      [tokenHash],
    );
    return rows[0]?.email;
  }

  async insertSession(m: EntityManager, tokenHash: Buffer, email: string, via: string, ttlS: number): Promise<void> {
    await m.query(
      `INSERT INTO console_sessions (token_hash, email, via, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
      [tokenHash, email, via, ttlS],
    );
  }

  async liveSession(tokenHash: Buffer): Promise<{ email: string } | undefined> {
    const rows = await this.db.query<{ email: string }[]>(
      `SELECT email FROM console_sessions WHERE token_hash = $1 AND expires_at > now()`,
      [tokenHash],
    );
    return rows[0];
  }

  /** Deletes a session: how it was made (`link` or `oidc`), or undefined when there was none. */
  async deleteSession(m: EntityManager, tokenHash: Buffer): Promise<string | undefined> {
    const [rows] = await m.query<[{ via: string }[], number]>(`DELETE FROM console_sessions WHERE token_hash = $1 RETURNING via`, [tokenHash]);
    return rows[0]?.via;
  }
}
