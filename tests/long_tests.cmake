# The suites' longest tests, with their seconds in the slowest build that runs each
# (TSan, or the release build for those only it runs), on two cores. ctest starts
# the costliest first, so that a suite's last minute is not one long test on one
# core while the other idles; once a build folder has run its suite, ctest orders
# by the times it measured instead. A name that no longer exists is ignored: keep
# the list to the tests that take seconds.
set_tests_properties(QueueStress.RandomCrossQueueWorkWithInjectedFaults PROPERTIES COST 13)
set_tests_properties(UnderUlimitV.EveryLimitEndsInARunOrOneLine PROPERTIES COST 9)
set_tests_properties(QuickCompare.ReproducesTheExperimentAndItsMemoryModel PROPERTIES COST 9)
set_tests_properties(ParseFuzz.EveryParserAcceptsOrThrowsParseError PROPERTIES COST 8)
set_tests_properties(Tf32.TheD2lLossTrajectoryStaysWithin16UnitsOfFp32s PROPERTIES COST 7)
set_tests_properties(TrainMlpLogs.FreshMemoryDoesNotFaultPageByPage PROPERTIES COST 7)
set_tests_properties(FileOptions.EveryFileOptionAgainstEveryHostileForm PROPERTIES COST 6)
set_tests_properties(Sweep.PlotRendersSvgAndPng PROPERTIES COST 6)
set_tests_properties(TrainMlpEpochs.LaterEpochsReuseThePoolsBlocksAndTrainOn PROPERTIES COST 6)
set_tests_properties(TrainAlloc.FinalLossIsTheSameUnderEveryPolicy PROPERTIES COST 6)
set_tests_properties(CheckedStdout.ClosedPipeFailsTheRunWithOneLine PROPERTIES COST 6)
set_tests_properties(HostileInputs.LoadFromADirectoryDevZeroOrASilentFifoIsOneLine PROPERTIES COST 5)
set_tests_properties(TrainGraph.AReplayedRunHoldsTheSlotsNotTheBacklog PROPERTIES COST 5)
set_tests_properties(TrainMlp.AConfigFifoWithNoWriterIsOneLineNotAHang PROPERTIES COST 5)
set_tests_properties(CuRandHost.UniformsAreBitwiseEqual PROPERTIES COST 5)
set_tests_properties(InterruptTwice.SecondSignalASecondLaterExitsAtOnceLeavingAValidLog PROPERTIES COST 5)
set_tests_properties(AsyncDemo.AllRunsEverySubcommand PROPERTIES COST 5)
set_tests_properties(MpiTrain.TheSweepRunsAcrossTheRanksAndRankZeroWritesItsSummary PROPERTIES COST 4)
set_tests_properties(TrainGraph.TheFiguresDocsGpuMdQuotes PROPERTIES COST 4)
# mpirun's SIGKILL follows its SIGTERM by 1 s, in which the ranks must finish:
# alone, not beside other tests (tests/CMakeLists.txt).
set_tests_properties(MpiTrain.SigintToMpirunEndsEveryRankWithTheSummaryMarkedInterrupted PROPERTIES RUN_SERIAL TRUE)
