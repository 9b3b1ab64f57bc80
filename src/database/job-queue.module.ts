import { Global, Module } from '@nestjs/common';
import { JobQueueTasks } from './job-queue';
import { JobQueueWorker } from './job-queue.worker';

/**
 * The PostgreSQL job queue (job-queue.ts), for every module: a module registers its tasks with JobQueueTasks at
 * init, and the worker runs them.
 */
@Global()
@Module({
  providers: [JobQueueTasks, JobQueueWorker],
  exports: [JobQueueTasks],
})
export class JobQueueModule {}
