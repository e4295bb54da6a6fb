// Package rsm is the replicated state machine orderd applies its total
// order to: the bank account of the notes' example and a small key-value
// map. It is deterministic, as state machine replication needs: the same
// commands in the same order leave every replica in the same state, to
// the cent and to the byte.
//
// # Commands
//
//	deposit AMOUNT       add AMOUNT dollars (up to 2 decimals: 12.34)
//	withdraw AMOUNT      take AMOUNT dollars away (refused below zero)
//	interest RATE%       add RATE percent (up to 2 decimals: 1%, 0.25%)
//	balance AMOUNT       set the balance (to start an experiment: balance 1000)
//	set KEY VALUE        set a key (KEY: 1-64 bytes without spaces; VALUE: up to 256 bytes)
//	del KEY              remove a key
//
// A refused command (an unknown verb, an overflow, a withdrawal below
// zero) is still in the total order: every replica refuses it alike.
//
// # Rounding
//
// Money is integer cents. Interest is balance x rate, rounded to the
// nearest cent, halves away from zero: 1% of $10.50 is 10.5 cents, so
// 11. With the notes' $1000, deposit 100 then interest 1% is $1111.00,
// interest 1% then deposit 100 is $1110.00.
package rsm
