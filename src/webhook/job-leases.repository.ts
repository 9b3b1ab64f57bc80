import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { preparedQuery } from '../database/prepared';
import { JobLease } from './job-lease.entity';

// Only a lease that has run out changes hands; the row lock of INSERT … ON CONFLICT orders two instances.
const TAKE_SQL = `
  INSERT INTO job_leases AS l (name, holder, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
  ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
  WHERE l.expires_at < now()
  RETURNING holder`;

/** Every query of job_leases (see its entity): the only file with SQL for it. */
@Injectable()
export class JobLeasesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Takes the job's lease for `seconds` unless another holder's has not run out; true when taken. */
  async take(name: string, holder: string, seconds: number): Promise<boolean> {
    const rows = await preparedQuery<{ holder: string }>(this.db, TAKE_SQL, [name, holder, seconds]);
    return rows.length > 0;
  }

  /** Lets the lease run out now, if `holder` still has it. */
  async release(name: string, holder: string): Promise<void> {
    await this.db.getRepository(JobLease).update({ name, holder }, { expiresAt: () => 'now()' });
  }
}
