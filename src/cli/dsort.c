/* dsort - distributed sort of fixed-size records: mpirun -n N dsort [OPTIONS] INPUT... -o FILE
 *
 * A thin client: MPI start-up and the job's communicator (cli.h), the program's body over it
 * (dsort_run.h, which libdsort's file sort runs too, dsort_file.h), and the exit. */
#include "cli.h"
#include "dsort_run.h"

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort");
    return dsort_cli_finish(dsort_run(&c, argc, argv));
}
