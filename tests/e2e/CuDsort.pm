package CuDsort;
# CuDsort.pm - runs coreutils' own sort tests (their sort.pl: tests/misc/sort.pl up to 9.4,
# tests/sort/sort.pl after) against dsort, for gnusortpl.sh. Not a copy of coreutils' test
# framework: it provides the three functions sort.pl calls (getlimits, triple_test, run_tests)
# so that perl can load sort.pl unchanged, and run_tests runs each case of its @Tests once, with
# its input files as operands (coreutils' triple_test adds the same case reading standard input
# by redirection and by pipe; those are not counted here), as
#
#     ENV... $DSORT --format lines ARGS FILES </dev/null
#
# and checks what coreutils' harness checks: standard output, the exit status (0 unless the
# case says EXIT) and the files of CMP, byte for byte; standard error must be empty unless the
# case says ERR (after its ERR_SUBST). dsort names itself "dsort": a leading "dsort: " on a line
# of its standard error is read as "sort: " (the program name of the cases' messages). Two
# differences in standard error are dsort's on purpose, and allowed:
#  - after GNU's message, lines of dsort's own (a usage error's "Try 'dsort --help' for more
#    information."): GNU's message must be the first lines, word for word;
#  - a file that cannot be opened: GNU says "sort: cannot read: F: CAUSE" (or "open failed"),
#    dsort names the failing rank, "dsort: rank R/P (HOST): cannot open 'F': CAUSE": its first
#    line must name F and end with GNU's CAUSE.
# The summary says how many cases passed with GNU's standard error word for word.
#
# A case is refused, not failed, when dsort exits 2 with a message that says why it does not
# do what the case asks, for one of these reasons, and no other:
#  - an option abbreviated so that dsort cannot tell which is meant (GNU's --p=1 is
#    --parallel; dsort also has --plan and --progress): "... is ambiguous";
#  - an operand that is not a regular file (/dev/null; dsort reads inputs of a known size, by
#    ranks at offsets): "'F' is not a regular file".
# A case whose output differs, where this machine's GNU sort (the version dsort follows, 9.1 on
# Debian 12, and the oracle of the other tests) gives dsort's output and exit status with the
# same options and input, is counted apart, as GNU sort's (LOCAL): the case tests a later
# coreutils (h1 of 9.2 and later: the suffixes R and Q of -h). Every other difference is a
# failure.
#
# Prints a line per case (PASS, FAIL with the differences, REFUSED with dsort's message) and a
# summary: "sort.pl: P of T pass, F fail, R refused, L as GNU sort V (E of the passes with
# GNU's standard error word for word)". run_tests returns F.
use strict;
use warnings;
use Exporter 'import';
our @EXPORT = qw(run_tests triple_test getlimits);

# The limits sort.pl uses: fields beyond SIZE_MAX and UINTMAX_MAX (both 2^64 on a 64-bit
# system), written as coreutils' getlimits prints them.
sub getlimits
{
    my $oflow = '18446744073709551616';
    return {UINTMAX_OFLOW => $oflow, SIZE_OFLOW => $oflow};
}

sub triple_test
{
    my ($tests) = @_;
    return @$tests;
}

sub slurp
{
    my ($f) = @_;
    open my $fh, '<:raw', $f or return undef;
    local $/;
    my $s = <$fh>;
    close $fh;
    return defined $s ? $s : '';
}

sub spit
{
    my ($f, $data) = @_;
    open my $fh, '>:raw', $f or die "CuDsort: $f: $!\n";
    print $fh $data;
    close $fh or die "CuDsort: $f: $!\n";
}

sub quote
{
    my ($s) = @_;
    $s =~ s/'/'\\''/g;
    return "'$s'";
}

# A file spec: contents (the file is named after the case) or {name => contents}.
sub make_file
{
    my ($name, $count, $spec) = @_;
    my ($file, $data) = ref $spec ? %$spec : ("$name.$$count", $spec);
    ref $spec or $$count++;
    spit($file, $data) if defined $data;
    return $file;
}

# Show a string as perl would write it, for the report.
sub show
{
    my ($s) = @_;
    return 'undef' unless defined $s;
    $s =~ s/([^\x20-\x7e])/sprintf('\\x%02x', ord $1)/ge;
    return "\"$s\"";
}

# One case: 'pass', 'refused' or 'fail', and the reasons.
sub run_case
{
    my ($dsort, $case) = @_;
    my ($name, @spec) = @$case;
    my (@args, @files, @cmp, %want, $env, @subst);
    my $count = 1;
    $want{EXIT} = 0;
    foreach my $e (@spec) {
        if (!ref $e) {
            push @args, $e;
            next;
        }
        my ($type, $val) = %$e;
        if ($type eq 'IN') {
            push @files, quote(make_file($name, \$count, $val));
        } elsif ($type eq 'OUT' || $type eq 'ERR' || $type eq 'EXIT') {
            $want{$type} = $val;
        } elsif ($type eq 'ERR_SUBST') {
            push @subst, $val;
        } elsif ($type eq 'ENV') {
            $env = $val;
        } elsif ($type eq 'CMP') {
            my ($data, $file) = @$val;
            push @cmp, [$data, (keys %$file)[0]];
        } else {
            return ('fail', "CuDsort does not know the spec $type");
        }
    }
    my $rc = run_cmd(join(' ', grep {defined} $env, quote($dsort), '--format lines', @args, @files),
                     "$name.O", "$name.E");
    my $out = slurp("$name.O");
    my $err = '';
    my $prog = 'sort'; # in the ERR_SUBST expressions, as in coreutils' harness
    foreach my $line (split /^/m, slurp("$name.E")) {
        $line =~ s/^dsort: /sort: /;
        $_ = $line;
        foreach my $s (@subst) {
            eval $s;
            die "CuDsort: $name: ERR_SUBST $s: $@" if $@;
        }
        $err .= $_;
    }
    my @why;
    push @why, "exit $rc, want $want{EXIT}" if $rc != $want{EXIT};
    my $wout = defined $want{OUT} ? $want{OUT} : '';
    my $werr = defined $want{ERR} ? $want{ERR} : '';
    push @why, 'stdout ' . show($out) . ', want ' . show($wout) if $out ne $wout;
    my $exact = $err eq $werr;
    push @why, 'stderr ' . show($err) . ', want ' . show($werr) unless stderr_ok($err, $werr);
    foreach my $c (@cmp) {
        my $got = slurp($c->[1]);
        push @why, "file $c->[1] " . show($got) . ', want ' . show($c->[0])
          if !defined $got || $got ne $c->[0];
    }
    return ($exact ? 'pass' : 'pass-own-words') unless @why;
    if ($out ne $wout) { # as this machine's GNU sort?
        my $grc = run_cmd(join(' ', grep {defined} $env, 'sort', @args, @files), "$name.G", "/dev/null");
        return ('local', "as this machine's GNU sort; the case wants " . show($wout))
          if $grc == $rc && slurp("$name.G") eq $out;
    }
    my $first = (split /\n/, $err)[0] // '';
    return ('refused', $first)
      if $rc == 2 && grep({/^--p=/} map {split ' '} @args) && $first =~ /is ambiguous/;
    return ('refused', $first)
      if $rc == 2 && $first =~ /^sort: rank \d+\/\d+ .*'([^']+)' is not a regular file$/
      && grep({$_ eq $1} map {split ' '} @args);
    return ('fail', @why);
}

# Run cmd by the shell, standard input /dev/null, into the files out and err: its exit status.
sub run_cmd
{
    my ($cmd, $out, $err) = @_;
    my $rc = system('/bin/sh', '-c', "timeout 60 sh -c " . quote("$cmd </dev/null >$out 2>$err"));
    return $rc == -1 ? -1 : $rc & 127 ? 128 + ($rc & 127) : $rc >> 8;
}

# Is dsort's standard error (err) GNU's (want), with the differences allowed above?
sub stderr_ok
{
    my ($err, $want) = @_;
    return 1 if $err eq $want;
    return 0 if $want eq '';
    return 1 if substr($err, 0, length $want) eq $want;
    my ($file, $cause) = $want =~ /^sort: (?:cannot read|open failed): (.+): ([^:\n]+)\n$/
      or return 0;
    my $first = (split /\n/, $err)[0] // '';
    return $first =~ /^sort: rank \d+\/\d+ .*'\Q$file\E'.*: \Q$cause\E$/;
}

sub run_tests
{
    my ($program_name, $prog, $tests) = @_;
    my $dsort = $ENV{DSORT} or die "CuDsort: set DSORT to the dsort program\n";
    my %n = (pass => 0, 'pass-own-words' => 0, fail => 0, refused => 0, local => 0);
    my %seen;
    foreach my $case (@$tests) {
        my $name = $case->[0];
        die "CuDsort: $name: a second case of that name\n" if $seen{$name}++;
        my ($verdict, @why) = run_case($dsort, $case);
        $n{$verdict}++;
        print uc($verdict =~ s/-.*//r), " $name", ($verdict =~ /-/ ? ' (dsort\'s own words in stderr)' : ''),
          (@why ? ': ' . join('; ', @why) : ''), "\n";
    }
    my $local = `sort --version 2>/dev/null` =~ /^sort .* ([0-9.]+)$/m ? $1 : '?';
    printf "sort.pl: %d of %d pass, %d fail, %d refused, %d as GNU sort %s (%d of the passes "
      . "with GNU's standard error word for word)\n", $n{pass} + $n{'pass-own-words'},
      scalar @$tests, $n{fail}, $n{refused}, $n{local}, $local, $n{pass};
    return $n{fail};
}

1;
