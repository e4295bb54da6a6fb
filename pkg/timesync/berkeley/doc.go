// Package berkeley is timed's internal synchronisation: the Berkeley
// algorithm (the course notes' chapter on physical clocks), with a fault-tolerant average and a master chosen
// by an election (any elect.Elector: Config.Election; the bully election of
// pkg/elect/bully by default, which timed uses). It is a sans-IO core.Core
// and a core.Scheduler (its Deadline is the election's and its own rounds',
// polls', collection's and retries').
//
// Every member runs the election inside this one; its leader is the
// master. Each round (Config.RoundInterval) the master polls every member
// with a burst of Config.Burst broadcast ClockPolls, BurstGap apart (one
// multicast frame each where the daemon has a group), carrying its
// election term; each worker answers every poll with a ClockReading. With the four
// timestamps of an exchange (see pkg/wire's berkeley.go) the master knows
// each worker's clock relative to its own, d_i, and the round trip, as NTP
// computes them, and of a worker's answers keeps the one with the smallest
// round trip (a reading delayed anywhere is skewed and slow). The times are
// when the frames really left: the master's own poll from the kernel's
// transmit stamp (the driver reports it, core.Message.Report), the
// worker's reading from its stamp plus the lag its recent readings showed.
// A worker's pending slew is added, so that clocks are compared as if
// every correction already commanded had been applied (a 200 ms
// correction takes 2.4 s to slew).
//
//	round r:  poll ──► readings (RTT > MaxRTT: excluded "rtt")
//	          clocks = {0 (master), d_i...}
//	          fewer than half the members' clocks read: skip the round
//	          the largest set that agree (two clocks agree within
//	          Threshold beyond their readings' uncertainty, RTT/2):
//	            a majority: drop its f highest and f lowest (f = (k-1)/3),
//	                        average the rest ── avg
//	            otherwise:  the median clock ── avg (clocks just started)
//	          (outside the set: excluded "disagrees": a falseticker cannot
//	          drag the group, it is only corrected towards it)
//	          avg += the rate pull (below)
//	          every worker with a reading ◄── ClockAdjust(avg - d_i)
//	          (acknowledged; resent every AdjustRetry, AdjustTries times,
//	          by a pkg/delivery Outbox)
//	          the master corrects itself by avg
//
// Corrections go through each member's servo (pkg/timesync/servo): they
// are slewed, never stepped back, and the successive corrections teach
// each clock its frequency error, so the group holds together between
// rounds instead of drifting apart at up to 200 ppm relative. Each member
// keeps the servo's error bound; the bound is relative to the group's
// time, which is the average of its clocks, not to any external reference.
//
// Three rules go beyond the notes, each for a failure the simulation found:
//
//   - The majority rules. A new master heard by one worker while the rest
//     still follow the old term cannot tell which of the two clocks is
//     wrong; a falseticker master that became master by rank would drag
//     that worker by its whole error. So a round needs the clocks of more
//     than half the members (counting those that answered in one of the
//     last three rounds), and an average needs an agreeing majority.
//   - Trimming. A falseticker within the agreement threshold still shifts
//     a plain mean; dropping the f extremes of the agreeing set (the
//     fault-tolerant average of Lundelius and Lynch) tolerates f faults
//     among 3f+1 clocks.
//   - The rate pull. Every member learns its frequency relative to the
//     group, so nothing pins the group's own rate: a disturbance (a
//     falseticker's pull, a restart) would leave the whole group running
//     hundreds of ppm fast or slow. Each worker reports its frequency
//     correction; the master shifts every correction by
//     -FrequencyPull × median correction × RoundInterval, which the
//     servos learn as a common frequency change, so the group settles at
//     the mean natural rate of its clocks, as an average of clocks should.
//
// A synchronised worker also checks what it is told: a correction further
// from where its servo's error bound puts the group's time than the bound
// plus what a master cannot measure (MaxRTT, Threshold) is held back as a
// spike and counted (adjust_spike), and applied only if the master keeps
// asking for it for Config.Stepout (adjust_stepout): then this clock was
// disturbed; a forged or buggy frame does not persist. A correction or a
// reported pending slew of more than a day is refused (implausible), and a
// master's claimed error is capped at the same margin, so it cannot widen
// the bound for the next correction.
//
// The round's computation is a pipeline of pure stages, each tested alone:
// tallyReadings (candidates, misses), quorate (enough clocks?), groupTime
// (the fault-tolerant average or the median), steer (the rate pull) and
// corrections (each worker's correction and error).
//
// A worker takes polls and adjustments only from the leader of the term its
// election knows, and tags its answers with that term: a deposed master,
// or one that has not yet learned of a newer term, cannot correct anyone,
// and there is never more than one master per term (the election's
// guarantee). When the master dies the election elects the next; its first
// round follows within one round interval of its election. The election's
// durable state is kept inside this core's (Saved.Election).
package berkeley
